/**
 * The developer view in Chromium against the local stack, as a new developer the operator just
 * created: apps and features created and edited through the forms (an invalid one shows the API's
 * message), a call made through the SDK (`createFaucet`, a session minted by the developer's backend)
 * counted on the overview chart's data for today in the browser's time zone (calls, tokens, amount
 * paid), keys shown once and revoked, the end user's spend and sessions (revoked from the user's row
 * by user_ref, and by the backend's id), payouts, axe on every view, and every view on a phone in
 * light and dark.
 */
import { createFaucet, type Session } from '@faucet/sdk';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usd } from '../src/app/ui/parts.tsx';
import { launchChromium, openConsole, screenshot, seriousViolations, signIn, stack, tourEveryView } from './browser.ts';

let browser: Browser;
let developerKey: string;
const timeZone = 'America/New_York';
const externalUserId = `console-user-${crypto.randomUUID()}`;
let publicAppId = '';

async function call<T>(url: string, credential: string, body?: unknown): Promise<T> {
  const response = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** Today in `timeZone` as YYYY-MM-DD (what the overview's last row is). */
const today = () => new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());

async function go(page: Page, label: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: label }).click();
  await page.getByRole('heading', { level: 1, name: label }).waitFor();
}

beforeAll(async () => {
  browser = await launchChromium();
  const created = await call<{ key: { api_key: string } }>(`${stack.apiUrl}/v1/admin/developers`, stack.adminToken, {
    name: 'Console Co',
    email: `console-${crypto.randomUUID()}@example.com`,
  });
  developerKey = created.key.api_key;
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe('developer view', { timeout: 300_000 }, () => {
  it('creates an app and a feature, and a call made through the SDK shows on the overview chart', async () => {
    const ui = await openConsole(browser, { timezoneId: timeZone });
    const { page } = ui;
    try {
      await signIn(page, 'developer', developerKey);
      await page.getByLabel('Totals of the period').waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      await go(page, 'Apps and features');
      await page.getByText('No apps yet.').waitFor();
      // The API refuses an empty name; its message is shown.
      ui.allowStatus(/^\/api\/v1\/developer\/apps$/, 400);
      await page.getByRole('button', { name: 'Create app' }).click();
      await expect.poll(() => page.getByRole('form', { name: 'New app' }).getByRole('alert').textContent()).toMatch(/name/);
      await page.getByLabel('New app name').fill('Console App');
      await page.getByLabel('Spend per end user per day (USD)').first().fill('5');
      await page.getByRole('button', { name: 'Create app' }).click();
      await page.getByRole('table', { name: 'Apps' }).getByRole('rowheader', { name: 'Console App' }).waitFor();
      publicAppId = (await page.getByRole('table', { name: 'Apps' }).locator('code').first().textContent()) ?? '';
      expect(publicAppId).toMatch(/^app_/);
      // The limit was sent as the API's 8-decimal string and comes back in the settings form.
      await expect
        .poll(() => page.getByRole('form', { name: 'Settings of Console App' }).getByLabel('Spend per end user per day (USD)').inputValue())
        .toBe('5.00000000');

      const newFeature = page.getByRole('form', { name: 'New feature' });
      ui.allowStatus(/^\/api\/v1\/developer\/apps\/[^/]+\/features$/, 400);
      await newFeature.getByLabel('Feature key').fill('not a key!');
      await newFeature.getByLabel('Default model').fill('mock:echo');
      await newFeature.getByRole('button', { name: 'Create feature' }).click();
      await expect.poll(() => newFeature.getByRole('alert').textContent()).toMatch(/feature_key/);
      await newFeature.getByLabel('Feature key').fill('console-chat');
      await newFeature.getByLabel('Name').fill('Console chat');
      await newFeature.getByLabel('Developer price per million tokens (USD)').fill('2');
      await newFeature.getByRole('button', { name: 'Create feature' }).click();
      const features = page.getByRole('table', { name: 'Features of Console App' });
      await features.getByRole('rowheader', { name: 'console-chat (default)' }).waitFor();

      await page.getByRole('button', { name: 'Edit console-chat' }).click();
      const edit = page.getByRole('form', { name: 'Edit feature console-chat' });
      await edit.getByLabel('Open fee per call (USD)').fill('0.01');
      await edit.getByLabel('Model aliases').fill('quick = mock:echo');
      await edit.getByRole('button', { name: 'Save feature' }).click();
      await expect.poll(() => edit.locator('.error, .ok').allTextContents()).toEqual(['Feature console-chat saved.']);
      await features.getByRole('cell', { name: '$0.01' }).waitFor();
      const saved = await call<{ open_fee_usd: string; model_aliases: Record<string, string>; developer_price_per_mtok_usd: string }>(
        `${stack.apiUrl}/v1/developer/apps/${publicAppId}/features/console-chat`,
        developerKey,
      );
      expect(saved).toMatchObject({
        open_fee_usd: '0.01000000',
        developer_price_per_mtok_usd: '2.00000000',
        model_aliases: { quick: 'mock:echo' },
      });
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-apps');

      // An end user of the new app calls through the SDK: `createFaucet` with a session the developer's
      // backend mints with its key (POST /v1/sessions), the wallet funded by the operator, then `chat`.
      const faucet = createFaucet({
        publicAppId,
        baseUrl: stack.apiUrl,
        gatewayBaseUrl: stack.gatewayUrl,
        session: () =>
          call<Session>(`${stack.apiUrl}/v1/sessions`, developerKey, { public_app_id: publicAppId, external_user_id: externalUserId }),
      });
      const wallet = await faucet.getWallet();
      await call(`${stack.apiUrl}/v1/admin/wallets/${wallet.wallet_id}/credit-test-balance`, stack.adminToken, {
        amount_usd: '1.00000000',
      });
      const completion = await faucet.chat({ feature: 'console-chat', model: 'mock:echo', input: 'Hello console' });
      expect(completion.choices[0]?.message.content).toContain('Hello console');
      const { input_tokens, output_tokens, charge } = completion.faucet;
      expect(completion.faucet).toMatchObject({ route_mode: 'platform', feature: 'console-chat' });
      expect(charge?.amount_usd).toMatch(/^0\.\d{8}$/);

      await go(page, 'Overview');
      // The charts' text alternative: each chart's numbers as a table, behind a disclosure.
      await page.getByText('Calls per day as a table').click();
      await page.getByText('Tokens per day as a table').click();
      await page.getByText('Revenue per day as a table').click();
      const todayIn = (chart: string) =>
        page
          .locator(`table[data-chart="${chart}"]`)
          .getByRole('row', { name: new RegExp(`^${today()} `) })
          .getByRole('cell');
      await expect
        .poll(
          async () => {
            await page.getByRole('button', { name: 'Refresh' }).click();
            await page.getByLabel('Totals of the period').waitFor();
            return todayIn('Calls').textContent({ timeout: 5_000 });
          },
          { timeout: 60_000, interval: 1_000 },
        )
        .toBe('1');
      // Exactly this call: its tokens and what the end user paid, as the SDK's answer gave them.
      expect(await todayIn('Tokens').textContent()).toBe((input_tokens + output_tokens).toLocaleString('en-US'));
      expect(await todayIn('Revenue').nth(1).textContent()).toBe(usd(charge?.amount_usd));
      await page
        .getByRole('region', { name: 'Top features' })
        .getByRole('rowheader', { name: `${publicAppId} / console-chat` })
        .waitFor();
      await page.getByRole('region', { name: 'Top models' }).getByRole('rowheader', { name: /echo/ }).waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-overview');
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });

  it('keys shown once and revoked, the end user with spend and a revoke of their sessions, payouts — axe on each', async () => {
    const ui = await openConsole(browser, { colorScheme: 'dark' });
    const { page } = ui;
    page.on('dialog', (dialog) => dialog.accept());
    try {
      await signIn(page, 'developer', developerKey);
      await go(page, 'Keys');
      await page.getByLabel('Label of a new key').fill('console test');
      await page.getByRole('button', { name: 'Create key' }).click();
      const shown = (await page.getByTestId('new-developer-key').textContent()) ?? '';
      expect(shown).toMatch(/^fdk_/);
      expect(await call<{ balance_usd: string }>(`${stack.apiUrl}/v1/developer/wallet`, shown)).toHaveProperty('balance_usd');
      const keys = page.getByRole('table', { name: 'Developer keys' });
      await expect.poll(() => keys.getByRole('row').count()).toBe(3);
      await page.getByRole('button', { name: 'I copied it' }).click();
      expect(await page.getByTestId('new-developer-key').count()).toBe(0);
      const row = keys.getByRole('row').filter({ hasText: 'console test' });
      await row.getByRole('button', { name: /^Revoke/ }).click();
      await row.getByText(/^revoked /).waitFor();
      const refused = await fetch(`${stack.apiUrl}/v1/developer/wallet`, { headers: { authorization: `Bearer ${shown}` } });
      expect(refused.status).toBe(401);

      ui.allowStatus(/^\/api\/v1\/developer\/provider-keys$/, 400);
      const provider = page.getByRole('form', { name: 'New provider key' });
      await provider.getByLabel('Provider').fill('openai');
      await provider.getByLabel('API key').fill('not-an-openai-key');
      await provider.getByLabel('Monthly budget (USD)').fill('10');
      await provider.getByRole('button', { name: 'Add key' }).click();
      await expect.poll(() => provider.getByRole('alert').textContent()).toMatch(/\(request [\w-]+\)$/);
      // A well-formed key is stored, listed masked with its budget, and disabled.
      await provider.getByLabel('API key').fill(`sk-${'a'.repeat(40)}`);
      await provider.getByRole('button', { name: 'Add key' }).click();
      const stored = page.getByRole('table', { name: 'Provider keys' }).getByRole('row').filter({ hasText: 'openai' });
      await stored.getByRole('cell', { name: '$10.00' }).waitFor();
      expect(await stored.textContent()).not.toContain('a'.repeat(40));
      expect(await stored.getByRole('rowheader').textContent()).toMatch(/^sk-.*a{4}$/);
      await stored.getByRole('button', { name: /^Disable/ }).click();
      await stored.getByRole('cell', { name: 'disabled' }).waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-keys-dark');

      await go(page, 'End users');
      const users = page.getByRole('table', { name: 'End users' });
      const user = users.getByRole('row').filter({ hasText: publicAppId });
      await expect.poll(() => user.count(), { timeout: 30_000 }).toBe(1);
      expect(await user.getByRole('cell').nth(1).textContent()).toBe('1');
      expect(await user.textContent()).not.toContain(externalUserId);
      // The row's button revokes the user's sessions by user_ref: the SDK's session of the first test and
      // one more the backend mints now, which works until then and gets 401 at the gateway after.
      const mint = () =>
        call<Session>(`${stack.apiUrl}/v1/sessions`, developerKey, { public_app_id: publicAppId, external_user_id: externalUserId });
      const chatAs = (session: Session) =>
        fetch(`${stack.gatewayUrl}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${session.session_token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'mock:echo', feature: 'console-chat', messages: [{ role: 'user', content: 'again' }] }),
        });
      const live = await mint();
      expect((await call<{ wallet_id: string }>(`${stack.apiUrl}/v1/user/wallet`, live.session_token)).wallet_id).toBeTruthy();
      expect(await user.getByRole('rowheader').textContent()).toBe(live.user_ref);
      await user.getByRole('button', { name: /^Revoke sessions of user / }).click();
      await expect
        .poll(() => page.getByRole('status').filter({ hasText: 'revoked for user' }).textContent())
        .toBe(`2 sessions revoked for user ${live.user_ref?.slice(0, 12)}…`);
      const afterRevoke = await chatAs(live);
      expect(afterRevoke.status).toBe(401);
      expect(((await afterRevoke.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
      expect((await fetch(`${stack.apiUrl}/v1/user/wallet`, { headers: { authorization: `Bearer ${live.session_token}` } })).status).toBe(
        401,
      );

      // The typed-id form still revokes by the id the backend knows the user by.
      const next = await mint();
      const revoke = page.getByRole('form', { name: 'Revoke sessions' });
      await revoke.getByLabel('Your user id').fill(externalUserId);
      await revoke.getByRole('button', { name: 'Revoke sessions' }).click();
      await revoke.getByRole('status').filter({ hasText: '1 session revoked.' }).waitFor();
      expect((await chatAs(next)).status).toBe(401);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-end-users-dark');

      await go(page, 'Payouts');
      await page.getByText('No payouts yet.').waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-payouts-dark');
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });

  it('is usable on a phone: the nav wraps above the view and nothing scrolls sideways', async () => {
    const ui = await openConsole(browser, { viewport: { width: 390, height: 844 } });
    const { page } = ui;
    try {
      await signIn(page, 'developer', developerKey);
      await page.getByLabel('Totals of the period').waitFor();
      const nav = await page.getByRole('navigation', { name: 'Console' }).boundingBox();
      const main = await page.locator('main').boundingBox();
      expect(nav && main && nav.y + nav.height <= main.y + 1).toBe(true);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      await go(page, 'Apps and features');
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'developer-phone');
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });

  for (const colorScheme of ['light', 'dark'] as const) {
    it(`every developer view on a phone in ${colorScheme} mode: no serious or critical axe violation, no sideways scroll`, async () => {
      const ui = await openConsole(browser, { viewport: { width: 390, height: 844 }, colorScheme });
      const { page } = ui;
      try {
        await signIn(page, 'developer', developerKey);
        expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe(colorScheme);
        const found = await tourEveryView(page);
        expect(Object.keys(found)).toEqual(['Overview', 'Apps and features', 'Keys', 'End users', 'Calls', 'Webhooks', 'Payouts']);
        expect(found).toEqual(Object.fromEntries(Object.keys(found).map((label) => [label, []])));
        await screenshot(page, `developer-payouts-phone-${colorScheme}`);
        ui.expectClean();
      } finally {
        await ui.close();
      }
    });
  }
});
