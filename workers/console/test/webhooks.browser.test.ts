/**
 * The Webhooks view in Chromium against the local stack (docs/webhooks.md), with real deliveries: an
 * endpoint added through the form (an address the API refuses shows its message there) shows its
 * signing secret once, with a copy button, and never again (not after a reload); the app's
 * low-balance threshold is set in the Apps view; end users whose calls through the SDK take their
 * balance below it make `end_user.balance_low` events, each delivered to the endpoint and failing
 * with the endpoint's HTTP 404. The log shows them a page at a time ("More deliveries"), by status; a
 * delivery opens by keyboard with its attempts and its payload (the event id); disabled, the endpoint
 * fails it at once when Resend tries it; enabled again, Resend sends it once more (one more attempt,
 * same event). On a phone in dark mode: readable without sideways scrolling, the secret rotated with an
 * overlap and without, an endpoint for all events, both deleted after a confirm.
 *
 * The stack's address guard lets exactly one loopback `host:port` through (UPSTREAM_ALLOW_LOOPBACK,
 * tests/setup/node-stack.ts): the fake upstream's, which answers 404 to a path it does not serve —
 * every delivery to `<fake upstream>/faucet-webhooks` fails with HTTP 404. The node stack keeps the
 * production retry settings (WEBHOOK_RETRY_BASE_SECONDS and WEBHOOK_MAX_ATTEMPTS unset: 30 s, 1, 2,
 * 4 … min, 8 attempts), so a failing delivery stays pending for about an hour; Resend tries a
 * pending one now. The test reads the first attempt, then disables the endpoint and resends: that
 * attempt fails the delivery at once, without a request.
 */
import { createFaucet, type Session } from '@faucet/sdk';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, openConsole, screenshot, seriousViolations, signIn, stack } from './browser.ts';

/** How long the page may take to show a change: the stack is shared with the other test files. */
const shortly = { timeout: 30_000, interval: 200 };
/** The log's page size (webhooks-wire.ts: `deliveryPageSize`). */
const pageSize = 10;
/** End users who cross the threshold: one event each, a page and one more. */
const spenders = pageSize + 1;

let browser: Browser;
let developerKey: string;
let publicAppId: string;
const appName = 'Webhooks App';
const endpointUrl = `http://${new URL(stack.fakeUpstreamCallsUrl).host}/faucet-webhooks`;
const allEventsUrl = `http://${new URL(stack.fakeUpstreamCallsUrl).host}/faucet-webhooks-all`;
/** The user_ref of each end user who spent. */
const userRefs: string[] = [];
/** The signing secret shown when the endpoint was added. */
let firstSecret = '';

interface Endpoint {
  id: string;
  url: string;
  event_types: string[];
  enabled: boolean;
  secret_hint: string;
  previous_secret_expires_at: string | null;
}

interface Delivery {
  id: string;
  event: { id: string; type: string };
  status: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
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

const endpoints = async () => (await call<{ data: Endpoint[] }>(`${stack.apiUrl}/v1/developer/webhooks`, developerKey)).data;

/** Every delivery to the endpoint, newest first, in the API's own pages. */
async function deliveriesOf(endpointId: string): Promise<Delivery[]> {
  const found: Delivery[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({ limit: '100', ...(cursor ? { cursor } : {}) });
    const page: { data: Delivery[]; next_cursor: string | null } = await call(
      `${stack.apiUrl}/v1/developer/webhooks/${endpointId}/deliveries?${query}`,
      developerKey,
    );
    found.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return found;
}

/** A new end user of the app with 1.00 USD who makes one call: their balance goes from 1.00 to below it. */
async function spendBelowOneDollar(index: number): Promise<string> {
  const faucet = createFaucet({
    publicAppId,
    baseUrl: stack.apiUrl,
    gatewayBaseUrl: stack.gatewayUrl,
    session: async () => {
      const session = await call<Session>(`${stack.apiUrl}/v1/sessions`, developerKey, {
        public_app_id: publicAppId,
        external_user_id: `webhooks-user-${index}-${crypto.randomUUID()}`,
      });
      if (session.user_ref && !userRefs.includes(session.user_ref)) userRefs.push(session.user_ref);
      return session;
    },
  });
  const wallet = await faucet.getWallet();
  await call(`${stack.apiUrl}/v1/admin/wallets/${wallet.wallet_id}/credit-test-balance`, stack.adminToken, { amount_usd: '1.00000000' });
  const completion = await faucet.chat({ feature: 'webhooks-chat', model: 'mock:echo', input: `Hello webhooks ${index}` });
  return completion.faucet.charge?.amount_usd ?? '0';
}

async function go(page: Page, label: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: label }).click();
  await page.getByRole('heading', { level: 1, name: label }).waitFor();
}

/** The value of `term` in the facts list named `list` inside `scope`. */
const fact = (scope: Locator, list: string, term: string) =>
  scope
    .getByLabel(list, { exact: true })
    .locator('div')
    .filter({ has: scope.page().getByRole('term').getByText(term, { exact: true }) })
    .getByRole('definition');

/** Clicks the log's Refresh until `ready` holds (deliveries happen in the background). */
async function refreshUntil(log: Locator, ready: () => Promise<boolean>, timeout = 90_000): Promise<void> {
  const refresh = log.getByRole('button', { name: 'Refresh deliveries' });
  await expect
    .poll(
      async () => {
        await refresh.and(log.locator(':enabled')).waitFor();
        await refresh.click();
        await refresh.and(log.locator(':enabled')).waitFor();
        return ready();
      },
      { timeout, interval: 1_000 },
    )
    .toBe(true);
}

/** The endpoints table's row of `url` (exactly: one URL is the start of the other). */
const endpointRow = (list: Locator, url: string) =>
  list
    .getByRole('table', { name: 'Webhook endpoints' })
    .getByRole('row')
    .filter({ has: list.page().getByRole('rowheader').locator('code').getByText(url, { exact: true }) });

/** The delivery ids of the log's rows, top to bottom. */
const shownDeliveries = (log: Locator) =>
  log
    .getByRole('table', { name: 'Deliveries' })
    .locator('tbody button[data-delivery]')
    .evaluateAll((buttons) => buttons.map((button) => button.getAttribute('data-delivery') ?? ''));

beforeAll(async () => {
  browser = await launchChromium();
  const created = await call<{ key: { api_key: string } }>(`${stack.apiUrl}/v1/admin/developers`, stack.adminToken, {
    name: 'Webhooks Co',
    email: `webhooks-${crypto.randomUUID()}@example.com`,
  });
  developerKey = created.key.api_key;
  publicAppId = (await call<{ public_app_id: string }>(`${stack.apiUrl}/v1/developer/apps`, developerKey, { name: appName })).public_app_id;
  await call(`${stack.apiUrl}/v1/developer/apps/${publicAppId}/features`, developerKey, {
    feature_key: 'webhooks-chat',
    name: 'Webhooks chat',
    default_model: 'mock:echo',
    // A price, so every call takes something from the end user's balance.
    developer_price_per_mtok_usd: '2.00000000',
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
});

describe('the Webhooks view', { timeout: 420_000 }, () => {
  it('adds an endpoint (secret shown once), logs real failing deliveries of end_user.balance_low, shows one, and resends it', async () => {
    const ui = await openConsole(browser);
    const { page } = ui;
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(stack.consoleUrl!).origin });
    try {
      await signIn(page, 'developer', developerKey);
      await go(page, 'Webhooks');
      const list = page.getByRole('region', { name: 'Endpoints' });
      await list.getByText('No endpoints yet.').waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      // "All events" takes every type: the others are checked and disabled, and come back as they were.
      const form = page.getByRole('form', { name: 'Add an endpoint' });
      const balanceLow = form.getByRole('checkbox', { name: 'end_user.balance_low', exact: true });
      const allEvents = form.getByRole('checkbox', { name: 'All events, including types added later' });
      await balanceLow.check();
      await allEvents.check();
      expect(await form.getByRole('checkbox', { name: 'payout.paid', exact: true }).isChecked()).toBe(true);
      expect(await balanceLow.isDisabled()).toBe(true);
      await allEvents.uncheck();
      expect(await balanceLow.isChecked()).toBe(true);
      expect(await form.getByRole('checkbox', { name: 'payout.paid', exact: true }).isChecked()).toBe(false);
      await form.getByLabel('Description').fill('Balance alerts');

      // A loopback address that is not the stack's one allowed host:port: the API's message at the form.
      ui.allowStatus(/^\/api\/v1\/developer\/webhooks$/, 400);
      await form.getByLabel('Endpoint URL').fill('http://127.0.0.1:9/hooks');
      await form.getByLabel('Endpoint URL').press('Enter');
      await expect.poll(() => form.getByRole('alert').textContent(), shortly).toMatch(/^url is refused: .*loopback.* \(request req_\w+\)$/);
      expect(await endpoints()).toEqual([]);

      // The allowed host:port, by keyboard: the secret is shown once, in a marked box that takes focus.
      await form.getByLabel('Endpoint URL').fill(endpointUrl);
      await form.getByLabel('Endpoint URL').press('Enter');
      const secretBox = page.getByRole('region', { name: `Signing secret of ${endpointUrl}`, exact: true });
      await secretBox.waitFor();
      await expect.poll(() => page.evaluate(() => document.activeElement?.textContent), shortly).toBe(`Signing secret of ${endpointUrl}`);
      expect(await secretBox.textContent()).toContain('Copy it now: it is not shown again.');
      firstSecret = (await secretBox.locator('code.secret').textContent()) ?? '';
      expect(firstSecret).toMatch(/^whsec_[\w-]{20,}$/);
      await secretBox.getByRole('button', { name: 'Copy secret' }).click();
      await secretBox.getByRole('status').getByText('Copied to the clipboard.').waitFor();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(firstSecret);
      // The form is empty again for the next endpoint.
      expect(await form.getByLabel('Endpoint URL').inputValue()).toBe('');

      // Listed with the secret's hint only, as the API lists it.
      const [stored] = await endpoints();
      expect(stored).toMatchObject({ url: endpointUrl, event_types: ['end_user.balance_low'], enabled: true });
      expect(stored!.secret_hint).toBe(`whsec_…${firstSecret.slice(-4)}`);
      expect(JSON.stringify(stored)).not.toContain(firstSecret);
      const row = endpointRow(list, endpointUrl);
      await row.waitFor();
      expect(await row.getByRole('rowheader').textContent()).toBe(`${endpointUrl}Balance alerts`);
      expect(await row.getByRole('cell').allTextContents()).toEqual([
        'end_user.balance_low',
        'yes',
        stored!.secret_hint,
        '—',
        `Manage ${endpointUrl}`,
      ]);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-webhooks-secret');

      // After a reload the secret is gone for good; the hint stays.
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
      await row.getByText(stored!.secret_hint).waitFor();
      expect(await page.getByRole('region', { name: `Signing secret of ${endpointUrl}` }).count()).toBe(0);
      expect(await page.content()).not.toContain(firstSecret);

      // The app's low-balance threshold, in the Apps view: 1 USD, the balance each end user starts with.
      await go(page, 'Apps and features');
      const alerts = page.getByRole('form', { name: `Low-balance alert of ${appName}` });
      await alerts.getByText('No threshold: no end user of this app sends end_user.balance_low.').waitFor();
      await alerts.getByLabel('Low-balance threshold (USD)').fill('1');
      await alerts.getByRole('button', { name: 'Save threshold' }).click();
      await alerts.getByRole('status').getByText('Low-balance threshold saved.').waitFor();
      await alerts.getByText('An end user whose balance falls below $1.00 sends end_user.balance_low to your webhooks.').waitFor();
      expect(await alerts.getByLabel('Low-balance threshold (USD)').inputValue()).toBe('1.00000000');
      expect(await call(`${stack.apiUrl}/v1/developer/apps/${publicAppId}/alerts`, developerKey)).toEqual({
        public_app_id: publicAppId,
        low_balance_threshold_usd: '1.00000000',
      });
      expect(await seriousViolations(page)).toEqual([]);

      // End users spend: each call takes a balance of 1.00 below 1.00, one event each.
      const charges = await Promise.all(Array.from({ length: spenders }, (_, index) => spendBelowOneDollar(index)));
      for (const charge of charges) expect(Number(charge)).toBeGreaterThan(0);

      // One delivery per event, each tried once at least (a few seconds after the call: the wallet
      // object's flush writes the event and wakes the relay) and refused with the endpoint's 404.
      await expect
        .poll(
          async () => {
            const found = await deliveriesOf(stored!.id);
            return found.length === spenders && found.every((delivery) => delivery.last_status === 404);
          },
          { timeout: 120_000, interval: 1_000 },
        )
        .toBe(true);

      // The log: the newest page.
      await go(page, 'Webhooks');
      const log = page.getByRole('region', { name: `Deliveries to ${endpointUrl}`, exact: true });
      const rows = log.getByRole('table', { name: 'Deliveries' }).locator('tbody tr');
      await rows.nth(pageSize - 1).waitFor();
      await log.getByText(`${pageSize} shown`, { exact: true }).waitFor();
      for (const index of [0, pageSize - 1]) {
        const cells = await rows.nth(index).getByRole('cell').allTextContents();
        expect(cells[0]).toMatch(/^end_user\.balance_low at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
        expect(cells[1]).toBe('pending');
        expect(Number(cells[2])).toBeGreaterThanOrEqual(1);
        expect(cells.slice(3, 5)).toEqual(['404', 'the endpoint answered HTTP 404']);
      }

      // "More deliveries" appends the rest: every delivery once, in the API's order.
      await log.getByRole('button', { name: 'More deliveries' }).click();
      await log.getByText(`${spenders} shown, no more`, { exact: true }).waitFor();
      const all = await deliveriesOf(stored!.id);
      expect(all).toHaveLength(spenders);
      expect(await shownDeliveries(log)).toEqual(all.map((delivery) => delivery.id));
      expect(await log.getByRole('button', { name: 'More deliveries' }).isDisabled()).toBe(true);

      // By status: none has failed yet.
      await log.getByLabel('Status', { exact: true }).selectOption('failed');
      await log.getByText('No failed deliveries.').waitFor();
      await log.getByLabel('Status', { exact: true }).selectOption('');
      await rows.nth(pageSize - 1).waitFor();

      // The newest delivery, opened by keyboard: focus goes to the panel; its attempts and its payload.
      const newest = all[0]!;
      await log.locator(`button[data-delivery="${newest.id}"]`).focus();
      await page.keyboard.press('Enter');
      const panel = page.getByRole('region', { name: 'Delivery details' });
      await expect.poll(() => page.evaluate(() => document.activeElement?.textContent), shortly).toBe('Delivery details');
      await fact(panel, 'Delivery', 'Event id').getByText(newest.event.id).waitFor();
      expect(await fact(panel, 'Delivery', 'Event type').textContent()).toBe('end_user.balance_low');
      expect(await fact(panel, 'Delivery', 'Status').textContent()).toBe('pending');
      expect(await fact(panel, 'Delivery', 'Last HTTP status').textContent()).toBe('404');
      const attemptRows = panel.getByRole('table', { name: 'Attempts' }).locator('tbody tr');
      const firstAttempt = await attemptRows.first().getByRole('cell').allTextContents();
      expect(firstAttempt.slice(0, 2)).toEqual(['404', 'the endpoint answered HTTP 404']);
      expect(firstAttempt[2]).toMatch(/^[\d,]+ ms$/);
      const payload = JSON.parse((await panel.locator('pre.payload').textContent()) ?? '');
      expect(payload).toMatchObject({
        id: newest.event.id,
        type: 'end_user.balance_low',
        data: { public_app_id: publicAppId, threshold_usd: '1.00000000' },
      });
      expect(userRefs).toContain(payload.data.user_ref);
      expect(payload.data.balance_usd < '1.00000000').toBe(true);
      // Pending: waiting for its next retry, which Resend brings forward.
      const resend = panel.getByRole('button', { name: 'Resend' });
      expect(await resend.isDisabled()).toBe(false);
      expect(await panel.getByText(/^Next attempt at .*; Resend tries it now/).count()).toBe(1);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-webhooks-delivery');

      // Disabled, the endpoint receives nothing: Resend's attempt fails the delivery without a request.
      const settings = page.getByRole('region', { name: `Endpoint ${endpointUrl}`, exact: true });
      const change = settings.getByRole('form', { name: 'Change the endpoint' });
      await change.getByRole('checkbox', { name: 'Enabled', exact: true }).focus();
      await page.keyboard.press('Space');
      await change.getByRole('button', { name: 'Save endpoint' }).click();
      await change.getByRole('status').getByText('Endpoint saved.').waitFor();
      await expect.poll(() => row.getByRole('cell').nth(1).textContent(), shortly).toBe('no');
      expect(await fact(settings, 'Endpoint', 'Enabled').textContent()).toBe('no: it receives nothing');
      await resend.click();
      await panel.getByRole('status').getByText('Queued again: refresh the log to see its attempt.').waitFor();
      await refreshUntil(log, async () => (await fact(panel, 'Delivery', 'Status').textContent()) === 'failed');
      expect(await fact(panel, 'Delivery', 'Last error').textContent()).toBe('the endpoint is disabled');
      const failedAfter = Number(await fact(panel, 'Delivery', 'Attempts').textContent());
      expect(await attemptRows.count()).toBe(failedAfter);
      const disabledAttempt = await attemptRows.last().getByRole('cell').allTextContents();
      expect(disabledAttempt.slice(0, 2)).toEqual(['no answer', 'the endpoint is disabled']);
      await log.getByLabel('Status', { exact: true }).selectOption('failed');
      await log.locator(`button[data-delivery="${newest.id}"]`).waitFor();

      // Enabled again, Resend: the same event goes out once more and the endpoint answers 404 again.
      await change.getByRole('checkbox', { name: 'Enabled', exact: true }).check();
      await change.getByRole('button', { name: 'Save endpoint' }).click();
      await expect.poll(() => row.getByRole('cell').nth(1).textContent(), shortly).toBe('yes');
      await log.getByLabel('Status', { exact: true }).selectOption('');
      await log.locator(`button[data-delivery="${newest.id}"]`).click();
      await fact(panel, 'Delivery', 'Event id').getByText(newest.event.id).waitFor();
      expect(await resend.isDisabled()).toBe(false);
      await resend.click();
      await panel.getByRole('status').getByText('Queued again: refresh the log to see its attempt.').waitFor();
      await refreshUntil(log, async () => Number(await fact(panel, 'Delivery', 'Attempts').textContent()) > failedAfter);
      const attempts = Number(await fact(panel, 'Delivery', 'Attempts').textContent());
      expect(await fact(panel, 'Delivery', 'Last HTTP status').textContent()).toBe('404');
      expect(await fact(panel, 'Delivery', 'Status').textContent()).toBe('pending');
      expect(await attemptRows.count()).toBe(attempts);
      expect((await attemptRows.nth(failedAfter).getByRole('cell').allTextContents()).slice(0, 2)).toEqual([
        '404',
        'the endpoint answered HTTP 404',
      ]);
      expect(JSON.parse((await panel.locator('pre.payload').textContent()) ?? '').id).toBe(newest.event.id);
      const [resent] = (await deliveriesOf(stored!.id)).filter((delivery) => delivery.id === newest.id);
      expect(resent).toMatchObject({ status: 'pending', last_status: 404, event: newest.event });
      expect(resent!.attempts).toBeGreaterThanOrEqual(attempts);

      // Closed by keyboard: focus goes back to its row.
      await panel.getByRole('button', { name: 'Close delivery details' }).press('Enter');
      await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('data-delivery')), shortly).toBe(newest.id);
      expect(await seriousViolations(page)).toEqual([]);
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });

  it('on a phone in dark mode: readable without sideways scrolling, the secret rotated, an endpoint for all events, both deleted', async () => {
    const ui = await openConsole(browser, { viewport: { width: 390, height: 844 }, colorScheme: 'dark' });
    const { page } = ui;
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.accept();
    });
    const wide = () => page.evaluate(() => document.documentElement.scrollWidth);
    try {
      await signIn(page, 'developer', developerKey);
      await go(page, 'Webhooks');
      const list = page.getByRole('region', { name: 'Endpoints' });
      const row = endpointRow(list, endpointUrl);
      await row.waitFor();
      const log = page.getByRole('region', { name: `Deliveries to ${endpointUrl}`, exact: true });
      await log.getByRole('table', { name: 'Deliveries' }).waitFor();
      await log.locator('tbody button[data-delivery]').first().click();
      const panel = page.getByRole('region', { name: 'Delivery details' });
      await panel.locator('pre.payload').waitFor();
      expect(await wide()).toBeLessThanOrEqual(390);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-webhooks-phone-dark');

      // Rotated with an hour's overlap: a new secret, shown once; the previous one signs for an hour.
      const settings = page.getByRole('region', { name: `Endpoint ${endpointUrl}`, exact: true });
      const rotate = settings.getByRole('form', { name: 'Rotate the signing secret' });
      expect(await rotate.getByRole('radio', { name: '24 hours' }).isChecked()).toBe(true);
      await rotate.getByRole('radio', { name: '1 hour' }).check();
      const before = Date.now();
      await rotate.getByRole('button', { name: 'Rotate secret' }).click();
      const secretBox = settings.getByRole('region', { name: 'New signing secret' });
      await secretBox.getByText('Copy it now: it is not shown again.').waitFor();
      const secret = (await secretBox.locator('code.secret').textContent()) ?? '';
      expect(secret).toMatch(/^whsec_[\w-]{20,}$/);
      expect(secret).not.toBe(firstSecret);
      const [rotated] = await endpoints();
      expect(rotated!.secret_hint).toBe(`whsec_…${secret.slice(-4)}`);
      const overlapEnd = Date.parse(rotated!.previous_secret_expires_at!);
      expect(overlapEnd - before).toBeGreaterThan(3_500_000);
      expect(overlapEnd - Date.now()).toBeLessThanOrEqual(3_600_000);
      const shownEnd = `${rotated!.previous_secret_expires_at!.slice(0, 19).replace('T', ' ')} UTC`;
      await expect.poll(() => row.getByRole('cell').nth(2).textContent(), shortly).toBe(rotated!.secret_hint);
      expect(await row.getByRole('cell').nth(3).textContent()).toBe(shownEnd);
      expect(await fact(settings, 'Endpoint', 'Previous secret signs until').textContent()).toBe(shownEnd);
      expect(await wide()).toBeLessThanOrEqual(390);
      expect(await seriousViolations(page)).toEqual([]);
      await secretBox.getByRole('button', { name: 'I stored it' }).click();
      expect(await page.content()).not.toContain(secret);

      // Rotated without overlap: the previous secret stops at once.
      await rotate.getByRole('radio', { name: 'None: the previous secret stops now' }).check();
      await rotate.getByRole('button', { name: 'Rotate secret' }).click();
      await settings.getByRole('region', { name: 'New signing secret' }).waitFor();
      await expect.poll(async () => (await endpoints())[0]!.previous_secret_expires_at, shortly).toBe(null);
      await expect.poll(() => row.getByRole('cell').nth(3).textContent(), shortly).toBe('—');

      // A second endpoint, for all events.
      const form = page.getByRole('form', { name: 'Add an endpoint' });
      await form.getByLabel('Endpoint URL').fill(allEventsUrl);
      await form.getByRole('checkbox', { name: 'All events, including types added later' }).check();
      await form.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByRole('region', { name: `Signing secret of ${allEventsUrl}` }).waitFor();
      const allRow = endpointRow(list, allEventsUrl);
      await allRow.waitFor();
      expect(await allRow.getByRole('cell').first().textContent()).toBe('All events');
      expect((await endpoints()).map((endpoint) => endpoint.event_types)).toEqual([['end_user.balance_low'], ['*']]);
      // The new endpoint is the one managed now: its log is empty.
      await page
        .getByRole('region', { name: `Deliveries to ${allEventsUrl}` })
        .getByText(/^No deliveries yet/)
        .waitFor();
      expect(await wide()).toBeLessThanOrEqual(390);
      expect(await seriousViolations(page)).toEqual([]);

      // Both deleted after a confirm: nothing more is sent to them.
      for (const url of [allEventsUrl, endpointUrl]) {
        await list.getByRole('button', { name: `Manage ${url}`, exact: true }).click();
        // Its log read first: a read still on its way when the endpoint is deleted is answered 404.
        const refresh = page.getByRole('region', { name: `Deliveries to ${url}` }).getByRole('button', { name: 'Refresh deliveries' });
        await expect.poll(() => refresh.isEnabled(), shortly).toBe(true);
        const endpointSettings = page.getByRole('region', { name: `Endpoint ${url}`, exact: true });
        await endpointSettings.getByRole('button', { name: 'Delete endpoint' }).click();
        await list.getByRole('status').getByText(`Endpoint ${url} deleted: nothing more is sent to it.`).waitFor();
        await expect.poll(() => endpointRow(list, url).count(), shortly).toBe(0);
      }
      expect(dialogs).toEqual([allEventsUrl, endpointUrl].map((url) => expect.stringContaining(`Delete the endpoint ${url}?`)));
      await list.getByText('No endpoints yet.').waitFor();
      expect(await endpoints()).toEqual([]);
      expect(await seriousViolations(page)).toEqual([]);

      // The threshold turned off from the Apps view.
      await go(page, 'Apps and features');
      const alerts = page.getByRole('form', { name: `Low-balance alert of ${appName}` });
      await alerts.getByLabel('Low-balance threshold (USD)').fill('');
      await alerts.getByRole('button', { name: 'Save threshold' }).click();
      await alerts.getByRole('status').getByText('Low-balance alert turned off.').waitFor();
      await alerts.getByText('No threshold: no end user of this app sends end_user.balance_low.').waitFor();
      expect(await wide()).toBeLessThanOrEqual(390);
      expect(await seriousViolations(page)).toEqual([]);
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });
});
