import { join } from 'node:path';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../chromium.ts';
import { startFakeFaucet, type FakeFaucet } from '../fake-faucet.ts';
import { startFakeServer, type FakeServer } from '../fake-server.ts';

/** The React components in Chromium against the fake API: keyboard, stop, theming, switching users. */
let faucet: FakeFaucet;
let pageServer: FakeServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  faucet = await startFakeFaucet();
  const bundle = await build({
    entryPoints: [join(import.meta.dirname, 'components-page.tsx')],
    bundle: true,
    write: false,
    format: 'esm',
    jsx: 'automatic',
    conditions: ['faucet-source'],
    define: { 'process.env.NODE_ENV': '"development"' },
    logLevel: 'silent',
  });
  const config = JSON.stringify({ apiUrl: faucet.url, publicAppId: faucet.publicAppId });
  pageServer = await startFakeServer((request, response) => {
    if (request.path === '/page.js')
      return void response.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle.outputFiles[0]!.text);
    response
      .writeHead(200, { 'content-type': 'text/html' })
      .end(
        `<!doctype html><html lang="en"><script type="application/json" id="config">${config}</script><div id="root"></div><script type="module" src="/page.js"></script></html>`,
      );
  });
  browser = await launchChromium();
  page = await browser.newPage();
  // The stack shares two cores with everything else under test; give slow answers room.
  page.setDefaultTimeout(90_000);
  await page.goto(pageServer.url);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await pageServer?.close();
  await faucet?.close();
});

const chat = () => page.getByRole('region', { name: 'Chat' });
const messageBox = () => chat().getByLabel('Message', { exact: true });
const sessionUsers = () => faucet.requestsTo('/v1/sessions').map((request) => JSON.parse(request.body).external_user_id as string);

describe('React components in Chromium', { timeout: 180_000 }, () => {
  it('Shift+Enter adds a line, Enter sends the whole message', async () => {
    await messageBox().click();
    await page.keyboard.type('line one');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('line two');
    expect(await messageBox().inputValue()).toBe('line one\nline two');
    expect(faucet.requestsTo('/v1/chat/completions')).toHaveLength(0);
    await page.keyboard.press('Enter');
    await chat().locator('.faucet-chat__message--assistant[data-status="done"]').waitFor();
    expect(await chat().locator('.faucet-chat__message--user .faucet-chat__content').textContent()).toBe('line one\nline two');
    expect(await messageBox().inputValue()).toBe('');
  });

  it('shows Stop while an answer streams; Stop ends it, marked as stopped, and Send returns', async () => {
    await messageBox().fill('STALL after one word');
    await messageBox().press('Enter');
    const stop = chat().getByRole('button', { name: 'Stop' });
    await stop.waitFor();
    await chat().locator('.faucet-chat__message--assistant[data-status="streaming"]', { hasText: 'echo:' }).waitFor();
    await stop.click();
    await chat().locator('.faucet-chat__message--assistant[data-status="stopped"]').waitFor();
    await chat().getByRole('button', { name: 'Send' }).waitFor();
    expect(await chat().getByRole('alert').count()).toBe(0);
  });

  it('takes its colours from CSS variables and keeps the class the app passes', async () => {
    expect(await chat().getAttribute('class')).toBe('faucet-chat themed');
    await messageBox().fill('x');
    const background = await chat()
      .getByRole('button', { name: 'Send' })
      .evaluate((button) => getComputedStyle(button).backgroundColor);
    expect(background).toBe('rgb(1, 2, 3)');
  });

  it('starts afresh for another user: a new session for that user, an empty conversation', async () => {
    expect(new Set(sessionUsers())).toEqual(new Set(['alice']));
    await page.getByRole('button', { name: 'Switch to bob' }).click();
    await expect.poll(() => sessionUsers().includes('bob'), { timeout: 60_000 }).toBe(true);
    expect(await chat().locator('.faucet-chat__message').count()).toBe(0);
    await messageBox().fill('hello as bob');
    await messageBox().press('Enter');
    await chat().locator('.faucet-chat__message--assistant[data-status="done"]').waitFor();
    const lastChat = faucet.requestsTo('/v1/chat/completions').at(-1)!;
    const bobToken = faucet.sessions[sessionUsers().lastIndexOf('bob')];
    expect(lastChat.headers.authorization).toBe(`Bearer ${bobToken}`);
  });
});
