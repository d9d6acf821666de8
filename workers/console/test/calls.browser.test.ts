/**
 * The Calls view in Chromium against the local stack: a call an end user makes through the SDK
 * (`createFaucet`, a session the developer's backend mints, `faucet.chat` on `mock:echo`) is found by
 * its request id and, from the End users row, by its end user, showing exactly the tokens and charge
 * the request log's detail (`GET /v1/developer/calls/{id}`) gives; its detail panel opens and closes
 * by keyboard; the daily errors and latency tables count it; axe on the view and the panel; a phone.
 */
import { createFaucet, type Session } from '@faucet/sdk';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usd } from '../src/app/ui/parts.tsx';
import { launchChromium, openConsole, screenshot, seriousViolations, signIn, stack } from './browser.ts';

let browser: Browser;
let developerKey: string;
let publicAppId: string;
const timeZone = 'Europe/Berlin';
const externalUserId = `calls-user-${crypto.randomUUID()}`;

interface CallDetail {
  id: string;
  request_id: string;
  user_ref: string;
  input_tokens: number;
  output_tokens: number;
  charge_usd: string;
  tokens: { input: number; output: number; cached_input: number; reasoning: number };
  timings: { total_ms: number };
  money: { retail_usd: string; developer_revenue_usd: string; upstream_cost_usd: string };
}
const made = {} as { requestId: string; inputTokens: number; outputTokens: number; charge: string; detail: CallDetail };

async function call<T>(url: string, credential: string, body?: unknown): Promise<T> {
  const response = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

const today = () => new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());
const count = (value: number) => value.toLocaleString('en-US');

async function go(page: Page, label: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: label }).click();
  await page.getByRole('heading', { level: 1, name: label }).waitFor();
}

/** Applies a request id filter in the Calls view and waits for the list to show only that call. */
async function findByRequestId(page: Page, requestId: string): Promise<void> {
  const form = page.getByRole('form', { name: 'Filter calls' });
  await form.getByLabel('Request id').fill(requestId);
  await form.getByRole('button', { name: 'Apply filters' }).click();
  await expect.poll(() => page.getByRole('table', { name: 'Calls' }).getByRole('row').count(), { timeout: 30_000 }).toBe(2);
}

beforeAll(async () => {
  browser = await launchChromium();
  const created = await call<{ key: { api_key: string } }>(`${stack.apiUrl}/v1/admin/developers`, stack.adminToken, {
    name: 'Calls Co',
    email: `calls-${crypto.randomUUID()}@example.com`,
  });
  developerKey = created.key.api_key;
  publicAppId = (await call<{ public_app_id: string }>(`${stack.apiUrl}/v1/developer/apps`, developerKey, { name: 'Calls App' }))
    .public_app_id;
  await call(`${stack.apiUrl}/v1/developer/apps/${publicAppId}/features`, developerKey, {
    feature_key: 'calls-chat',
    name: 'Calls chat',
    default_model: 'mock:echo',
    developer_price_per_mtok_usd: '2.00000000',
    open_fee_usd: '0.01000000',
  });

  // An end user of the app calls through the SDK with a session the developer's backend mints.
  const faucet = createFaucet({
    publicAppId,
    baseUrl: stack.apiUrl,
    gatewayBaseUrl: stack.gatewayUrl,
    session: () =>
      call<Session>(`${stack.apiUrl}/v1/sessions`, developerKey, { public_app_id: publicAppId, external_user_id: externalUserId }),
  });
  const wallet = await faucet.getWallet();
  await call(`${stack.apiUrl}/v1/admin/wallets/${wallet.wallet_id}/credit-test-balance`, stack.adminToken, { amount_usd: '1.00000000' });
  const completion = await faucet.chat({ feature: 'calls-chat', model: 'mock:echo', input: 'Hello calls' });
  const { request_id, input_tokens, output_tokens, charge } = completion.faucet;
  expect(charge?.amount_usd).toMatch(/^\d+\.\d{8}$/);
  made.requestId = request_id;
  made.inputTokens = input_tokens;
  made.outputTokens = output_tokens;
  made.charge = charge!.amount_usd;
  // The log row is written with the wallet object's next flush (within a second or so).
  let found: { id: string } | undefined;
  for (let attempt = 0; found === undefined && attempt < 60; attempt++) {
    if (attempt) await new Promise((resolve) => setTimeout(resolve, 500));
    [found] = (
      await call<{ data: Array<{ id: string }> }>(`${stack.apiUrl}/v1/developer/calls?request_id=${request_id}`, developerKey)
    ).data;
  }
  if (found === undefined) throw new Error('the call never reached the request log');
  made.detail = await call<CallDetail>(`${stack.apiUrl}/v1/developer/calls/${found.id}`, developerKey);
}, 120_000);

afterAll(async () => {
  await browser?.close();
});

describe('developer Calls view', { timeout: 300_000 }, () => {
  it('finds the SDK call by its request id with exactly its tokens and charge, opens its detail by keyboard, and charts it', async () => {
    const { detail } = made;
    // The request log's detail agrees with what the SDK was told.
    expect(detail).toMatchObject({ request_id: made.requestId, input_tokens: made.inputTokens, output_tokens: made.outputTokens });
    expect(detail.money.retail_usd).toBe(made.charge);

    const ui = await openConsole(browser, { timezoneId: timeZone });
    const { page } = ui;
    try {
      await signIn(page, 'developer', developerKey);
      await go(page, 'Calls');
      await findByRequestId(page, made.requestId);
      const row = page.getByRole('table', { name: 'Calls' }).getByRole('row').filter({ hasText: made.requestId });
      const cells = row.getByRole('cell');
      expect(await cells.nth(5).textContent()).toBe(`${count(detail.tokens.input)} in / ${count(detail.tokens.output)} out`);
      expect(await cells.nth(6).textContent()).toBe(usd(detail.money.retail_usd));
      expect(await cells.nth(4).textContent()).toBe('answered');
      expect(await seriousViolations(page)).toEqual([]);

      // The panel opens from the request id (a button), by keyboard, and takes focus.
      await row.getByRole('button', { name: made.requestId }).focus();
      await page.keyboard.press('Enter');
      const panel = page.getByRole('region', { name: 'Call details' });
      await panel.getByLabel('Tokens').waitFor();
      await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Call details');
      const fact = (list: string, term: string) =>
        panel
          .getByLabel(list)
          .locator('div')
          .filter({ has: page.getByRole('term').getByText(term, { exact: true }) })
          .getByRole('definition');
      expect(await fact('Call', 'Request id').textContent()).toBe(made.requestId);
      expect(await fact('Call', 'Call id').textContent()).toBe(detail.id);
      expect(await fact('Call', 'Outcome').textContent()).toBe('answered');
      expect(await fact('Tokens', 'Input').textContent()).toBe(count(detail.tokens.input));
      expect(await fact('Tokens', 'Output').textContent()).toBe(count(detail.tokens.output));
      expect(await fact('Tokens', 'Cached input').textContent()).toBe(count(detail.tokens.cached_input));
      expect(await fact('Tokens', 'Reasoning').textContent()).toBe(count(detail.tokens.reasoning));
      expect(await fact('Money', 'Charged to the end user').textContent()).toBe(usd(detail.money.retail_usd));
      expect(await fact('Money', 'Your revenue').textContent()).toBe(usd(detail.money.developer_revenue_usd));
      expect(await fact('Money', 'Upstream cost').textContent()).toBe(usd(detail.money.upstream_cost_usd));
      expect(await fact('Timings', 'Total').textContent()).toMatch(/^[\d,]+ ms$/);
      // No prompt or answer is shown: none is kept.
      expect(await page.locator('main').textContent()).not.toContain('Hello calls');
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-calls-detail');

      // Close (keyboard) gives focus back to the row's button.
      await panel.getByRole('button', { name: 'Close call details' }).focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => panel.count()).toBe(0);
      await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe(made.requestId);

      // Clear empties every filter and keeps the keyboard in the form.
      const form = page.getByRole('form', { name: 'Filter calls' });
      await form.getByRole('button', { name: 'Clear filters' }).click();
      await expect.poll(() => form.getByLabel('Request id').inputValue()).toBe('');
      await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('name'))).toBe('app');
      await page.getByText('1 shown, no more').waitFor();

      // Today's row of the daily tables (in the browser's time zone) counts this call, without an error.
      await page.getByText('Errors per day as a table').click();
      await page.getByText('Latency per day as a table').click();
      const todayIn = (chart: string) =>
        page
          .locator(`table[data-chart="${chart}"]`)
          .getByRole('row', { name: new RegExp(`^${today()} `) })
          .getByRole('cell');
      expect(await todayIn('Errors').allTextContents()).toEqual(['0', '1', '0', '0', '0']);
      // One call: its total time is the day's p50 and p95.
      const total = `${count(detail.timings.total_ms)} ms`;
      expect(await todayIn('Latency').allTextContents()).toEqual([total, total]);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-calls');
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });

  it('links an End users row to that user’s calls (by user_ref), with the call and only theirs', async () => {
    const ui = await openConsole(browser, { colorScheme: 'dark' });
    const { page } = ui;
    try {
      await signIn(page, 'developer', developerKey);
      await go(page, 'End users');
      const user = page.getByRole('table', { name: 'End users' }).getByRole('row').filter({ hasText: publicAppId });
      await expect.poll(() => user.count(), { timeout: 30_000 }).toBe(1);
      expect(await user.getByRole('rowheader').textContent()).toBe(made.detail.user_ref);
      await user.getByRole('link', { name: /^Calls of user / }).click();
      await page.getByRole('heading', { level: 1, name: 'Calls' }).waitFor();
      expect(await page.getByRole('form', { name: 'Filter calls' }).getByLabel('End user (user_ref)').inputValue()).toBe(
        made.detail.user_ref,
      );
      const rows = page.getByRole('table', { name: 'Calls' }).getByRole('row');
      await expect.poll(() => rows.count(), { timeout: 30_000 }).toBe(2);
      const row = rows.filter({ hasText: made.requestId });
      expect(await row.locator('code.user-ref').getAttribute('title')).toBe(made.detail.user_ref);
      expect(await row.getByRole('cell').nth(6).textContent()).toBe(usd(made.charge));
      // The raw id the backend knows the user by is never shown.
      expect(await page.locator('main').textContent()).not.toContain(externalUserId);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-calls-by-user-dark');
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });

  it('works on a phone: filters, the list and the detail panel without sideways scrolling, axe clean', async () => {
    const ui = await openConsole(browser, { viewport: { width: 390, height: 844 } });
    const { page } = ui;
    const wide = () => page.evaluate(() => document.documentElement.scrollWidth);
    try {
      await signIn(page, 'developer', developerKey);
      await go(page, 'Calls');
      await findByRequestId(page, made.requestId);
      expect(await wide()).toBeLessThanOrEqual(390);
      expect(await seriousViolations(page)).toEqual([]);
      await page.getByRole('table', { name: 'Calls' }).getByRole('button', { name: made.requestId }).click();
      const panel = page.getByRole('region', { name: 'Call details' });
      await panel.getByLabel('Money').waitFor();
      expect(await wide()).toBeLessThanOrEqual(390);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-calls-phone');
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });
});
