import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type {} from '../../tests/setup/node-stack.ts';
import { startDemoServer, type DemoServer } from '../demo/serve.ts';
import { startFakeUpstream, type FakeUpstream } from '../../bridge/test-support/fake-upstream.ts';
import { freePort } from '../../bridge/test-support/listen.ts';
import { startTestBridge, type TestBridge } from '../../bridge/test-support/start-test-bridge.ts';
import { launchChromium } from './chromium.ts';

const repoRoot = join(import.meta.dirname, '..', '..');

/** The demo page served against the real local stack of the node project's global setup. */
const stack = inject('stack');
let demo: DemoServer;
let upstream: FakeUpstream;
let bridge: TestBridge;
let browser: Browser;
let page: Page;

/** USD decimal string to integer units of 1e-8, to compare balances without floats. */
const units = (usd: string) => BigInt(usd.replace(/ USD$/, '').replace('.', ''));

async function balance(): Promise<string> {
  const output = page.getByRole('region', { name: 'Usage' }).locator('.faucet-usage__balance');
  await expect.poll(() => output.textContent(), { timeout: 60_000 }).toMatch(/^\d+\.\d{8} USD$/);
  return (await output.textContent())!;
}

beforeAll(async () => {
  // The local route: the page calls a real bridge (in process, a fake Ollama behind it) that allows the page's origin.
  const demoPort = await freePort();
  upstream = await startFakeUpstream();
  bridge = await startTestBridge({
    upstream: { url: upstream.url, kind: 'ollama' },
    apiBaseUrl: stack.apiUrl,
    allowedOrigins: [`http://127.0.0.1:${demoPort}`],
  });
  demo = await startDemoServer({
    port: demoPort,
    bridgeUrl: bridge.url,
    apiBaseUrl: stack.apiUrl,
    gatewayBaseUrl: stack.gatewayUrl,
    publicAppId: stack.publicAppId,
    developerKey: stack.developerKey,
    userId: stack.demoExternalUserId,
    featureKey: stack.featureKey,
  });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // The stack shares two cores with everything else under test; give slow answers room.
  page.setDefaultTimeout(90_000);
  await page.goto(demo.url);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await demo?.close();
  await bridge?.close(0);
  await upstream?.close();
});

describe('demo page in Chromium', { timeout: 180_000 }, () => {
  it('answers a chat message, streamed into the conversation', async () => {
    const chat = page.getByRole('region', { name: 'Chat' });
    await chat.getByLabel('Message', { exact: true }).fill('Hello from the browser');
    await chat.getByLabel('Message', { exact: true }).press('Enter');
    const answer = chat.locator('.faucet-chat__message--assistant[data-status="done"]');
    await answer.waitFor();
    expect(await answer.locator('.faucet-chat__content').textContent()).toBe('Echo: Hello from the browser');
  });

  it('shows the usage summary of a feature command', async () => {
    const command = page.getByRole('region', { name: 'Feature command' });
    await command.getByRole('button', { name: 'Run' }).click();
    const summary = command.getByRole('definition');
    await command.locator('.faucet-summary').waitFor();
    expect(await command.locator('.faucet-summary__route-mode').textContent()).toBe('platform');
    expect(await command.locator('.faucet-summary__request-id').textContent()).toMatch(/\S{8,}/);
    expect(await command.locator('.faucet-summary__model').textContent()).toBe('mock:echo');
    expect(await command.locator('.faucet-summary__charge').textContent()).toMatch(/^\d+\.\d{8} USD$/);
    expect(await command.locator('.faucet-summary__tokens').textContent()).toMatch(/^\d+ in \/ \d+ out/);
    expect(await summary.count()).toBeGreaterThanOrEqual(4);
  });

  it('shows the balance going down after a paid call', async () => {
    const before = await balance();
    const chat = page.getByRole('region', { name: 'Chat' });
    await chat.getByLabel('Message', { exact: true }).fill('One more, please');
    await chat.getByRole('button', { name: 'Send' }).click();
    await chat.locator('.faucet-chat__message--assistant[data-status="done"]', { hasText: 'One more, please' }).waitFor();
    await expect.poll(async () => units(await balance()), { timeout: 60_000 }).toBeLessThan(units(before));
    expect(await page.getByRole('region', { name: 'Usage' }).locator('.faucet-usage__row').count()).toBeGreaterThan(0);
  });

  it('displays a server error with its code and request ID', async () => {
    await page.getByLabel('Model', { exact: true }).fill('mock:no-such-model');
    const chat = page.getByRole('region', { name: 'Chat' });
    await chat.getByRole('button', { name: 'Send' }).waitFor();
    await chat.getByLabel('Message', { exact: true }).fill('This should fail');
    await chat.getByLabel('Message', { exact: true }).press('Enter');
    const alert = chat.getByRole('alert');
    await alert.waitFor();
    expect(await alert.getAttribute('data-code')).toBe('invalid_request');
    expect(await alert.textContent()).toMatch(/Request ID sdk_[0-9a-f]{32}/);
    await page.getByLabel('Model', { exact: true }).fill('mock:echo');
  });

  it('runs the feature command on the local route through the bridge and shows the accepted usage report', async () => {
    await page.locator('.demo__bridge', { hasText: 'Local bridge ready' }).waitFor();
    await page.getByLabel('Route', { exact: true }).selectOption('local');
    const command = page.getByRole('region', { name: 'Feature command' });
    await command.getByRole('button', { name: 'Run' }).click();
    await command.locator('.faucet-summary__route-mode', { hasText: 'local' }).waitFor();
    expect(await command.locator('.faucet-feature__text').textContent()).toBe('Hello from the fake.');
    expect(await command.locator('.faucet-summary__model').textContent()).toBe('ollama:llama3.2:3b');
    expect(await command.locator('.faucet-summary__report-status').textContent()).toBe('accepted');
    expect(await command.locator('.faucet-summary__request-id').textContent()).toMatch(/^loc_[0-9a-f]{32}$/);
    await page.getByLabel('Route', { exact: true }).selectOption('platform');
  });

  it('displays invalid JSON input as an error and does not run', async () => {
    const command = page.getByRole('region', { name: 'Feature command' });
    await command.getByLabel('Input (JSON)').fill('{"task": ');
    const alert = command.getByRole('alert');
    await alert.waitFor();
    expect(await alert.getAttribute('data-code')).toBe('invalid_json');
    expect(await command.getByRole('button', { name: 'Run' }).isDisabled()).toBe(true);
    mkdirSync(join(repoRoot, 'test-results'), { recursive: true });
    await page.screenshot({ path: join(repoRoot, 'test-results', 'sdk-demo-page.png'), fullPage: true });
  });
});
