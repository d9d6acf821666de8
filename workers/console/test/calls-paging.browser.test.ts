/**
 * The Calls view's "More calls" in Chromium against the local stack: a developer whose end user made
 * more calls than two of the view's pages (50 each) sees them all after two "More calls", each once,
 * newest first, in exactly the order the request log's own pages give (`GET /v1/developer/calls`),
 * each page appended under the last; then the button says there is no more.
 */
import { createFaucet, type Session } from '@faucet/sdk';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { launchChromium, openConsole, screenshot, seriousViolations, signIn, stack } from './browser.ts';

/** The view's page size (Calls.tsx asks for `limit: 50`). */
const pageSize = 50;
/** Two full pages and part of a third: both the first page's cursor and a later page's are followed. */
const callCount = 2 * pageSize + 5;

let browser: Browser;
let developerKey: string;
/** How long a page may take to show: the stack is shared with the other test files running beside this one. */
const shortly = { timeout: 30_000, interval: 200 };
/** Request ids in the order the calls were made. */
const made: string[] = [];

interface LoggedCall {
  id: string;
  request_id: string;
  created_at: string;
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

/** Every call of the developer in the request log's order, page after page. */
async function loggedCalls(): Promise<LoggedCall[]> {
  const calls: LoggedCall[] = [];
  let cursor: string | null | undefined;
  do {
    const query = new URLSearchParams({ limit: '100', ...(cursor ? { cursor } : {}) });
    const page = await call<{ data: LoggedCall[]; next_cursor: string | null }>(
      `${stack.apiUrl}/v1/developer/calls?${query}`,
      developerKey,
    );
    calls.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return calls;
}

/** The request ids of the Calls table's rows, top to bottom. */
const shownRequestIds = (page: Page) =>
  page.evaluate(() =>
    Array.from(document.querySelectorAll('table[aria-label="Calls"] tbody button[data-call]'), (button) => button.textContent ?? ''),
  );

beforeAll(async () => {
  browser = await launchChromium();
  const created = await call<{ key: { api_key: string } }>(`${stack.apiUrl}/v1/admin/developers`, stack.adminToken, {
    name: 'Paging Co',
    email: `paging-${crypto.randomUUID()}@example.com`,
  });
  developerKey = created.key.api_key;
  const publicAppId = (await call<{ public_app_id: string }>(`${stack.apiUrl}/v1/developer/apps`, developerKey, { name: 'Paging App' }))
    .public_app_id;
  await call(`${stack.apiUrl}/v1/developer/apps/${publicAppId}/features`, developerKey, {
    feature_key: 'paging-chat',
    name: 'Paging chat',
    default_model: 'mock:echo',
  });
  const faucet = createFaucet({
    publicAppId,
    baseUrl: stack.apiUrl,
    gatewayBaseUrl: stack.gatewayUrl,
    session: () =>
      call<Session>(`${stack.apiUrl}/v1/sessions`, developerKey, {
        public_app_id: publicAppId,
        external_user_id: `paging-user-${crypto.randomUUID()}`,
      }),
  });
  const wallet = await faucet.getWallet();
  await call(`${stack.apiUrl}/v1/admin/wallets/${wallet.wallet_id}/credit-test-balance`, stack.adminToken, { amount_usd: '5.00000000' });
  // One after the other, so each call is authorized after the one before it.
  for (let index = 0; index < callCount; index++) {
    const completion = await faucet.chat({ feature: 'paging-chat', model: 'mock:echo', input: `paging ${index}` });
    made.push(completion.faucet.request_id);
  }
  // The rows are written with the wallet object's flushes, shortly after the answers.
  await vi.waitFor(async () => expect(await loggedCalls()).toHaveLength(callCount), { timeout: 60_000, interval: 500 });
}, 240_000);

afterAll(async () => {
  await browser?.close();
});

describe('developer Calls view, paging', { timeout: 300_000 }, () => {
  it('"More calls" appends the next pages: every call once, newest first, as the request log orders them', async () => {
    const logged = await loggedCalls();
    // The log's order is newest first: created_at never rises down the list, and the calls made later
    // were authorized no earlier than those before them.
    const at = new Map(logged.map((row) => [row.request_id, row.created_at]));
    expect(logged.map((row) => row.created_at)).toEqual(
      logged
        .map((row) => row.created_at)
        .sort()
        .reverse(),
    );
    expect(made.map((requestId) => at.get(requestId))).toEqual(made.map((requestId) => at.get(requestId)).sort());
    const expected = logged.map((row) => row.request_id);
    expect(new Set(expected)).toEqual(new Set(made));

    const ui = await openConsole(browser);
    const { page } = ui;
    try {
      await signIn(page, 'developer', developerKey);
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Calls' }).click();
      await page.getByRole('heading', { level: 1, name: 'Calls' }).waitFor();
      const more = page.getByRole('button', { name: 'More calls' });
      const counter = page.locator('.actions [aria-live="polite"]');

      await expect.poll(() => counter.textContent(), shortly).toBe(`${pageSize} shown`);
      const first = await shownRequestIds(page);
      expect(first).toEqual(expected.slice(0, pageSize));
      expect(await more.isEnabled()).toBe(true);

      // By keyboard: the second page comes under the first, which stays as it was.
      await more.focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => counter.textContent(), shortly).toBe(`${2 * pageSize} shown`);
      const second = await shownRequestIds(page);
      expect(second.slice(0, pageSize)).toEqual(first);
      expect(second).toEqual(expected.slice(0, 2 * pageSize));

      // The third page follows the cursor the second page gave; then there is no more.
      await more.click();
      await expect.poll(() => counter.textContent(), shortly).toBe(`${callCount} shown, no more`);
      const all = await shownRequestIds(page);
      expect(all).toEqual(expected);
      expect(new Set(all).size).toBe(callCount);
      expect(await more.isDisabled()).toBe(true);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-calls-paged');
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });
});
