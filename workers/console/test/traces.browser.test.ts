/**
 * An app's trace export in Chromium against the local stack (docs/traces.md): set through the Apps
 * view's form by keyboard, listed with its header values masked (the clear value is never on the
 * page again), a delivery that really fails after a call through the SDK shown as failing with the
 * API's error and the count of failures in a row, replaced disabled and removed on a phone — the
 * API's refusal shown at the form, axe clean.
 *
 * The stack's address guard lets exactly one loopback `host:port` through (UPSTREAM_ALLOW_LOOPBACK,
 * tests/setup/node-stack.ts): the fake upstream's. A receiver this test starts on another port is
 * refused when set, and never contacted; the export that is kept points at the fake upstream's
 * `/v1/traces`, which it does not serve: every delivery gets HTTP 404, a failure the queue does not
 * retry, so each call adds exactly one failure.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createFaucet, type Session } from '@faucet/sdk';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, openConsole, screenshot, seriousViolations, signIn, stack } from './browser.ts';

let browser: Browser;
let developerKey: string;
let publicAppId: string;
let chat: () => Promise<unknown>;
let receiver: Server;
let receiverUrl: string;
let receiverRequests = 0;
const appName = 'Traces App';
const failingEndpoint = `http://${new URL(stack.fakeUpstreamCallsUrl).host}/v1/traces`;
const secretValue = `hny-ingest-${crypto.randomUUID()}`;
const shortValue = 'short';

interface TraceExport {
  endpoint: string;
  headers: Record<string, string>;
  delivery: { state: string; last_error: string | null; consecutive_failures: number };
}

async function call<T>(url: string, credential: string, body?: unknown): Promise<T> {
  const response = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

const tracesUrl = () => `${stack.apiUrl}/v1/developer/apps/${publicAppId}/traces`;

async function openTraces(page: Page): Promise<Locator> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Apps and features' }).click();
  const region = page.getByRole('region', { name: `Traces of ${appName}` });
  await region.getByRole('form', { name: 'Set trace export' }).waitFor();
  return region;
}

/** The value of `term` in the region's facts list named `list`. */
const fact = (region: Locator, list: string, term: string) =>
  region
    .getByLabel(list)
    .locator('div')
    .filter({ has: region.page().getByRole('term').getByText(term, { exact: true }) })
    .getByRole('definition');

/** Clicks Refresh until the delivery has failed `failures` times in a row (the queue delivers a few seconds after the call). */
async function waitForFailures(region: Locator, failures: number): Promise<void> {
  await expect
    .poll(
      async () => {
        await region.getByRole('button', { name: 'Refresh traces' }).click();
        await region.getByRole('button', { name: 'Refresh traces' }).and(region.locator(':enabled')).waitFor();
        return fact(region, 'Delivery', 'Consecutive failures').textContent({ timeout: 5_000 });
      },
      { timeout: 90_000, interval: 1_000 },
    )
    .toBe(String(failures));
}

/** Every input's value on the page: a header's clear value must not be among them once saved. */
const inputValues = (page: Page) => page.evaluate(() => Array.from(document.querySelectorAll('input'), (input) => input.value));

beforeAll(async () => {
  browser = await launchChromium();
  receiver = createServer((_request, response) => {
    receiverRequests += 1;
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/traces`;

  const created = await call<{ key: { api_key: string } }>(`${stack.apiUrl}/v1/admin/developers`, stack.adminToken, {
    name: 'Traces Co',
    email: `traces-${crypto.randomUUID()}@example.com`,
  });
  developerKey = created.key.api_key;
  publicAppId = (await call<{ public_app_id: string }>(`${stack.apiUrl}/v1/developer/apps`, developerKey, { name: appName })).public_app_id;
  await call(`${stack.apiUrl}/v1/developer/apps/${publicAppId}/features`, developerKey, {
    feature_key: 'traces-chat',
    name: 'Traces chat',
    default_model: 'mock:echo',
  });
  const faucet = createFaucet({
    publicAppId,
    baseUrl: stack.apiUrl,
    gatewayBaseUrl: stack.gatewayUrl,
    session: () =>
      call<Session>(`${stack.apiUrl}/v1/sessions`, developerKey, {
        public_app_id: publicAppId,
        external_user_id: `traces-user-${crypto.randomUUID()}`,
      }),
  });
  const wallet = await faucet.getWallet();
  await call(`${stack.apiUrl}/v1/admin/wallets/${wallet.wallet_id}/credit-test-balance`, stack.adminToken, { amount_usd: '1.00000000' });
  chat = () => faucet.chat({ feature: 'traces-chat', model: 'mock:echo', input: 'Hello traces' });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

describe('an app’s trace export in the Apps view', { timeout: 300_000 }, () => {
  it('is set by keyboard, listed masked, and shows its deliveries failing with the error and how many in a row', async () => {
    const ui = await openConsole(browser);
    const { page } = ui;
    try {
      await signIn(page, 'developer', developerKey);
      const region = await openTraces(page);
      await region.getByText('This app sends no traces.').waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      // Endpoint and two headers, by keyboard: "Add header" moves focus to the new row's name.
      const form = region.getByRole('form', { name: 'Set trace export' });
      await form.getByLabel('Endpoint URL').fill(receiverUrl);
      const addHeader = form.getByRole('button', { name: 'Add header' });
      const focusedLabel = () => page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.labels?.[0]?.textContent);
      for (const [index, name, value] of [
        [1, 'x-honeycomb-team', secretValue],
        [2, 'x-short', shortValue],
        [3, 'x-not-wanted', 'dropped'],
      ] as const) {
        await addHeader.focus();
        await page.keyboard.press('Enter');
        await expect.poll(focusedLabel).toBe(`Header ${index} name`);
        await page.keyboard.type(name);
        await page.keyboard.press('Tab');
        expect(await focusedLabel()).toBe(`Header ${index} value`);
        await page.keyboard.type(value);
      }
      // Removing a row gives focus back to "Add header".
      await form.getByRole('button', { name: 'Remove header 3' }).focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => form.getByLabel(/^Header \d name$/).count()).toBe(2);
      await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Add header');
      expect(await form.getByRole('checkbox', { name: 'Enabled' }).isChecked()).toBe(true);

      // A loopback receiver that is not the stack's one allowed host:port: the API refuses it (400),
      // the message is shown at the form, nothing is stored and the receiver is never contacted.
      ui.allowStatus(/^\/api\/v1\/developer\/apps\/[^/]+\/traces$/, 400);
      await form.getByLabel('Endpoint URL').press('Enter');
      await expect.poll(() => form.getByRole('alert').textContent()).toMatch(/^endpoint is refused: .*loopback.* \(request req_\w+\)$/);
      expect((await fetch(tracesUrl(), { headers: { authorization: `Bearer ${developerKey}` } })).status).toBe(404);
      expect(receiverRequests).toBe(0);
      await region.getByText('This app sends no traces.').waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      // The allowed host:port; the typed headers are still in the form.
      await form.getByLabel('Endpoint URL').fill(failingEndpoint);
      await form.getByRole('button', { name: 'Send traces' }).click();
      await form.getByRole('status').getByText('Trace export saved.').waitFor();
      expect(await fact(region, 'Current trace export', 'Endpoint').textContent()).toBe(failingEndpoint);
      const stored = await call<TraceExport>(tracesUrl(), developerKey);
      expect(stored.headers).toEqual({ 'x-honeycomb-team': `...${secretValue.slice(-4)}`, 'x-short': '...' });
      expect(await fact(region, 'Current trace export', 'Headers').getByRole('listitem').allTextContents()).toEqual([
        `x-honeycomb-team: ...${secretValue.slice(-4)}`,
        'x-short: ...',
      ]);
      expect(await fact(region, 'Current trace export', 'Enabled').textContent()).toBe('yes');
      expect(await fact(region, 'Delivery', 'State').textContent()).toMatch(/^pending/);
      // The clear values are gone from the page: the form came back with the names only.
      expect(await form.getByLabel('Header 1 name').inputValue()).toBe('x-honeycomb-team');
      expect(await form.getByLabel('Header 1 value').inputValue()).toBe('');
      expect(await inputValues(page)).not.toContain(secretValue);
      expect(await page.content()).not.toContain(secretValue);

      // A call of the app: its span goes out with the wallet object's flush, through the queue, and the
      // endpoint answers 404.
      await chat();
      await waitForFailures(region, 1);
      const failing = await call<TraceExport>(tracesUrl(), developerKey);
      expect(failing.delivery).toMatchObject({ state: 'failing', consecutive_failures: 1 });
      expect(failing.delivery.last_error).toMatch(/404/);
      expect(await fact(region, 'Delivery', 'State').textContent()).toBe('failing');
      expect(await fact(region, 'Delivery', 'Last error').textContent()).toBe(failing.delivery.last_error);
      const warning = region.locator('p.error');
      expect(await warning.textContent()).toMatch(
        new RegExp(
          `^Deliveries are failing: 1 in a row\\. Last error \\(\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2} UTC\\): ${failing.delivery.last_error}$`,
        ),
      );

      // Another call, another failed delivery: the count goes on.
      await chat();
      await waitForFailures(region, 2);
      expect(await warning.textContent()).toMatch(/^Deliveries are failing: 2 in a row\./);
      expect(await page.content()).not.toContain(secretValue);
      expect(receiverRequests).toBe(0);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-traces-failing');
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });

  it('on a phone in dark mode: the failing export readable without sideways scrolling, replaced disabled, then removed', async () => {
    const ui = await openConsole(browser, { viewport: { width: 390, height: 844 }, colorScheme: 'dark' });
    const { page } = ui;
    page.on('dialog', (dialog) => dialog.accept());
    const wide = () => page.evaluate(() => document.documentElement.scrollWidth);
    try {
      await signIn(page, 'developer', developerKey);
      const region = await openTraces(page);
      await region
        .locator('p.error')
        .getByText(/^Deliveries are failing: 2 in a row\./)
        .waitFor();
      expect(await wide()).toBeLessThanOrEqual(390);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-traces-phone-dark');

      // Replacing needs every header value again; unchecked (Space), the export is kept and sends nothing.
      const form = region.getByRole('form', { name: 'Set trace export' });
      await form.getByLabel('Header 1 value').fill(secretValue);
      await form.getByLabel('Header 2 value').fill(shortValue);
      await form.getByRole('checkbox', { name: 'Enabled' }).focus();
      await page.keyboard.press('Space');
      await form.getByRole('button', { name: 'Replace export' }).click();
      await expect.poll(() => fact(region, 'Current trace export', 'Enabled').textContent()).toBe('no: nothing is sent');
      // A replaced export starts its delivery history again.
      expect(await fact(region, 'Delivery', 'Consecutive failures').textContent()).toBe('0');
      expect(await region.locator('p.error').count()).toBe(0);
      expect(await call<{ enabled: boolean }>(tracesUrl(), developerKey)).toMatchObject({ enabled: false });
      expect(await inputValues(page)).not.toContain(secretValue);
      expect(await wide()).toBeLessThanOrEqual(390);
      expect(await seriousViolations(page)).toEqual([]);

      await form.getByRole('button', { name: 'Remove export' }).click();
      await region.getByText('This app sends no traces.').waitFor();
      await form.getByRole('status').getByText('Trace export removed.').waitFor();
      expect((await fetch(tracesUrl(), { headers: { authorization: `Bearer ${developerKey}` } })).status).toBe(404);
      expect(await seriousViolations(page)).toEqual([]);
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });
});
