/**
 * The demo page's top-up in Chromium against the local stack and its fake Stripe: a new end user
 * (empty wallet) tops up 12.34 USD, pays on the fake's hosted page, comes back, and the top-up
 * component shows the credited balance, then a paid call's receipt. The page must stay clean: no
 * console error, no failed request, no serious or critical axe-core violation; a screenshot is kept.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import axe from 'axe-core';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type {} from '../../tests/setup/node-stack.ts';
import { startFakeUpstream, type FakeUpstream } from '../../bridge/test/support/fake-upstream.ts';
import { freePort } from '../../bridge/test/support/listen.ts';
import { startTestBridge, type TestBridge } from '../../bridge/test/support/start-test-bridge.ts';
import { startDemoServer, type DemoServer } from '../demo/serve.ts';
import { launchChromium } from './chromium.ts';

const stack = inject('stack');
const resultsDir = join(import.meta.dirname, '..', '..', 'test-results');
const userId = `top-up-user-${crypto.randomUUID()}`;
let demo: DemoServer;
let upstream: FakeUpstream;
let bridge: TestBridge;
let browser: Browser;
let page: Page;
/** Console errors, page errors and failed requests (network failures or answers >= 400) seen on the page. */
const problems: string[] = [];

async function seriousViolations(target: Page): Promise<string[]> {
  await target.addScriptTag({ content: axe.source });
  const violations = await target.evaluate(async () => {
    const result = await (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, nodes: violation.nodes.length }));
  });
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.impact} ${violation.id} (${violation.nodes} nodes)`);
}

beforeAll(async () => {
  if (!stack.stripeFakeUrl) throw new Error('the node stack runs without the fake Stripe (a real Stripe key in the test secrets?)');
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
    userId,
    featureKey: stack.featureKey,
  });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(90_000);
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`HTTP ${response.status()} ${response.request().method()} ${response.url()}`);
  });
  page.on('requestfailed', async (request) => {
    // A stream the SDK stops reading at `[DONE]` (it cancels the body) after a 200 answer: the page's own choice, not a failure.
    if (request.failure()?.errorText === 'net::ERR_ABORTED' && (await request.response())?.ok()) return;
    problems.push(`request failed: ${request.url()} (${request.failure()?.errorText})`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    // The browser's own favicon fetch (neither the demo server nor the fake Stripe has one) is not the page's request.
    if (new URL(message.location().url || 'about:blank').pathname === '/favicon.ico') return;
    problems.push(`console error: ${message.text()} (${message.location().url})`);
  });
  await page.goto(demo.url);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await demo?.close();
  await bridge?.close(0);
  await upstream?.close();
});

const topUp = () => page.getByRole('region', { name: 'Top up' });
const shownBalance = () => topUp().locator('.faucet-topup__balance');

describe('top-up through the fake Stripe in Chromium', { timeout: 240_000 }, () => {
  it("a new user's empty wallet: the component shows 0 and refuses an amount that is not dollars and cents", async () => {
    await expect.poll(() => shownBalance().textContent(), { timeout: 60_000 }).toBe('0.00000000 USD');
    const amount = topUp().getByLabel('Amount (USD)');
    await amount.fill('12.345');
    expect(await amount.getAttribute('aria-invalid')).toBe('true');
    expect(await topUp().getByRole('button', { name: 'Top up' }).isDisabled()).toBe(true);
    await amount.fill('12.34');
    expect(await topUp().getByRole('button', { name: 'Top up' }).isEnabled()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('pays 12.34 USD on the checkout page; back on the demo page the credited balance is shown', async () => {
    await topUp().getByRole('button', { name: 'Top up' }).click();
    await page.waitForURL((url) => url.href.startsWith(`${stack.stripeFakeUrl}/c/pay/cs_test_`));
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toContain('Fake Stripe Checkout');
    expect(await page.locator('strong').textContent()).toBe('12.34 USD');
    await page.getByRole('button', { name: 'Pay' }).click();

    // Stripe's redirect names only the outcome; the page asks the server until the webhook's credit landed.
    await page.waitForURL((url) => url.href.startsWith(demo.url));
    await page
      .locator('.faucet-topup[data-phase="credited"]')
      .waitFor()
      .catch(async (error: unknown) => {
        throw new Error(`${String(error)}\nproblems: ${problems.join('; ')}\npage: ${(await page.content()).slice(0, 2000)}`);
      });
    expect(await shownBalance().textContent()).toBe('12.34000000 USD');
    expect(await topUp().locator('.faucet-topup__status').textContent()).toBe('12.34000000 USD added to your balance.');
    // The `checkout` parameter is dropped, so a reload does not replay the return.
    expect(new URL(page.url()).searchParams.has('checkout')).toBe(false);
    // The usage panel under the same provider refreshed with it.
    await expect
      .poll(() => page.getByRole('region', { name: 'Usage' }).locator('.faucet-usage__balance').textContent())
      .toBe('12.34000000 USD');
  });

  it('a paid call lowers the balance and its receipt shows route, model, tokens and the booked charge, never a credential', async () => {
    const chat = page.getByRole('region', { name: 'Chat' });
    await chat.getByLabel('Message', { exact: true }).fill('A receipt, please');
    await chat.getByLabel('Message', { exact: true }).press('Enter');
    await chat.locator('.faucet-chat__message--assistant[data-status="done"]', { hasText: 'A receipt, please' }).waitFor();
    const receipt = page.getByRole('region', { name: 'Receipt of the last call' });
    await receipt.locator('.faucet-receipt__booking', { hasText: 'Booked' }).waitFor();
    expect(await receipt.locator('.faucet-receipt__route-mode').textContent()).toBe('platform');
    expect(await receipt.locator('.faucet-receipt__model').textContent()).toBe('mock:echo');
    expect(await receipt.locator('.faucet-receipt__tokens').textContent()).toMatch(/^\d+ in \/ \d+ out/);
    const charge = (await receipt.locator('.faucet-receipt__charge').textContent())!;
    expect(charge).toMatch(/^\d+\.\d{8} USD$/);
    expect(await receipt.locator('.faucet-receipt__request-id').textContent()).toMatch(/^sdk_[0-9a-f]{32}$/);
    const units = (usd: string) => BigInt(usd.replace(/ USD$/, '').replace('.', ''));
    await expect.poll(async () => units((await shownBalance().textContent())!)).toBe(units('12.34000000') - units(charge));
    const html = await page.content();
    expect(html).not.toContain(stack.developerKey);
    expect(html).not.toMatch(/fvs_[A-Za-z0-9]/);

    expect(await seriousViolations(page)).toEqual([]);
    mkdirSync(resultsDir, { recursive: true });
    await page.screenshot({ path: join(resultsDir, 'sdk-top-up.png'), fullPage: true });
    expect(problems).toEqual([]);
  });
});
