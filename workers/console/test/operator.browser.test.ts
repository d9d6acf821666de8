/**
 * The operator's views in Chromium against the local stack: a new developer (created through the
 * admin API) gets 5,000 USD on its wallet through the console's adjustment form, the operator runs
 * payouts, approves the developer's payout with a note and marks it paid — and the API agrees. Every
 * operator view passes axe (on a desktop, and on a phone in light and dark), is screenshotted, and the page
 * shows no console error and makes no failed request beyond the refusals the test provokes.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, openConsole, screenshot, seriousViolations, signIn, stack, tourEveryView } from './browser.ts';

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

async function admin<T>(method: string, path: string, body?: unknown, token = stack.adminToken): Promise<T> {
  const response = await fetch(`${stack.apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** A developer of its own, so the payout the test reviews is only its. */
async function newDeveloper() {
  const suffix = crypto.randomUUID().slice(0, 8);
  const created = await admin<{ developer: { id: string }; key: { api_key: string } }>('POST', '/v1/admin/developers', {
    name: `Payout test ${suffix}`,
    email: `payout-${suffix}@example.test`,
  });
  const wallet = await admin<{ wallet_id: string; available_usd: string }>('GET', '/v1/developer/wallet', undefined, created.key.api_key);
  return { id: created.developer.id, key: created.key.api_key, walletId: wallet.wallet_id };
}

const goTo = async (page: import('playwright-core').Page, label: string) => {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: label, exact: true }).click();
  await page.getByRole('heading', { level: 1 }).first().waitFor();
};

describe('operator views', { timeout: 300_000 }, () => {
  it('credits a developer, runs payouts, approves the payout with a note and marks it paid', async () => {
    const developer = await newDeveloper();
    const ui = await openConsole(browser);
    const { page } = ui;
    try {
      await signIn(page, 'operator', stack.adminToken);
      await page.getByRole('heading', { name: 'Payouts', level: 1 }).waitFor();

      // Wallet adjustment: the form carries its own idempotency key, renewed after a booking.
      await goTo(page, 'Wallet adjustments');
      const keyBefore = await page.getByTestId('idempotency-key').textContent();
      expect(keyBefore).toMatch(/^console-[0-9a-f-]{36}$/);
      await page.getByLabel('Wallet ID').fill(developer.walletId);
      await page.getByLabel('Amount (USD)').fill('5000');
      await page.getByLabel('Reason').fill('Revenue for the payout review test');
      await page.getByRole('button', { name: 'Book adjustment' }).click();
      await expect.poll(() => page.getByRole('status').textContent()).toMatch(/^Booked credit of \$5000\.00 \(adjustment\) on wallet /);
      expect(await page.getByTestId('idempotency-key').textContent()).not.toBe(keyBefore);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'operator-adjustments');
      const wallet = await admin<{ available_usd: string }>('GET', '/v1/developer/wallet', undefined, developer.key);
      expect(wallet.available_usd).toBe('5000.00000000');

      // Payouts: run with a threshold only this developer reaches, then review its payout.
      await goTo(page, 'Payouts');
      await page.getByLabel('Threshold (USD)').fill('4000');
      await page.getByRole('button', { name: 'Run payouts' }).click();
      const row = page.locator(`tr[data-developer="${developer.id}"]`);
      await page.locator(`tr[data-developer="${developer.id}"][data-status="pending"]`).waitFor();
      expect(await row.locator('td.num').textContent()).toBe('$5000.00');
      // Approve needs a note: the buttons stay disabled without one.
      expect(await row.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true);
      await row.getByRole('textbox').fill('Checked the revenue; approved');
      await row.getByRole('button', { name: 'Approve' }).click();
      await page.locator(`tr[data-developer="${developer.id}"][data-status="processing"]`).waitFor();
      expect(await page.locator(`tr[data-developer="${developer.id}"]`).textContent()).toContain('Checked the revenue; approved');
      await page.locator(`tr[data-developer="${developer.id}"]`).getByRole('button', { name: 'Mark paid' }).click();
      await page.locator(`tr[data-developer="${developer.id}"][data-status="paid"]`).waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'operator-payouts');

      const payouts = await admin<{ data: Array<{ developer_id: string; status: string; operator_note: string; amount_usd: string }> }>(
        'GET',
        '/v1/admin/payouts?limit=500',
      );
      expect(payouts.data.filter((payout) => payout.developer_id === developer.id)).toEqual([
        expect.objectContaining({ status: 'paid', operator_note: 'Checked the revenue; approved', amount_usd: '5000.00000000' }),
      ]);
      const after = await admin<{ balance_usd: string; available_usd: string }>('GET', '/v1/developer/wallet', undefined, developer.key);
      expect(after).toMatchObject({ balance_usd: '0.00000000', available_usd: '0.00000000' });
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });

  it('reconciliation, developers (create, suspend, unsuspend) and Stripe (events, replay): each passes axe', async () => {
    const ui = await openConsole(browser);
    const { page } = ui;
    try {
      await signIn(page, 'operator', stack.adminToken);

      await goTo(page, 'Reconciliation');
      await page.locator('[data-verdict]').first().waitFor();
      await page.locator('[data-verdict]').nth(1).waitFor();
      expect(await page.locator('[data-verdict]').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-verdict')))).toEqual([
        'ok',
        'ok',
      ]);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'operator-reconciliation');

      await goTo(page, 'Developers');
      const suffix = crypto.randomUUID().slice(0, 8);
      await page.getByLabel('Name').fill(`Console dev ${suffix}`);
      await page.getByLabel('Email').fill(`console-${suffix}@example.test`);
      await page.getByRole('button', { name: 'Create developer' }).click();
      const key = (await page.getByTestId('new-developer-key').textContent())!;
      expect(key).toMatch(/^fdk_/);
      expect(page.url()).not.toContain(key);
      await page.getByRole('button', { name: `Suspend Console dev ${suffix}` }).click();
      await page.getByRole('button', { name: `Unsuspend Console dev ${suffix}` }).waitFor();
      // The suspended developer's key is refused at once.
      const refused = await fetch(`${stack.apiUrl}/v1/developer/wallet`, { headers: { authorization: `Bearer ${key}` } });
      expect(refused.status).toBe(403);
      await page.getByRole('button', { name: `Unsuspend Console dev ${suffix}` }).click();
      await page.getByRole('button', { name: `Suspend Console dev ${suffix}` }).waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'operator-developers');

      await goTo(page, 'Stripe');
      await page.getByRole('heading', { name: 'Webhook events received' }).waitFor();
      ui.allowStatus(/^\/api\/v1\/admin\/stripe\/checkout-sessions\/[^/]+\/replay$/, 404);
      await page.getByLabel('Checkout session ID').fill('cs_test_not_a_session');
      await page.getByRole('button', { name: 'Replay' }).click();
      await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/^Stripe has no such checkout session \(request \S+\)$/);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'operator-stripe');
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });

  for (const colorScheme of ['light', 'dark'] as const) {
    it(`every operator view on a phone in ${colorScheme} mode: no serious or critical axe violation, no sideways scroll`, async () => {
      const ui = await openConsole(browser, { viewport: { width: 390, height: 844 }, colorScheme });
      const { page } = ui;
      try {
        await signIn(page, 'operator', stack.adminToken);
        expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe(colorScheme);
        await page.getByRole('heading', { name: 'Review queue' }).waitFor();
        await page.locator('table, p.muted').first().waitFor();
        await screenshot(page, `operator-payouts-phone-${colorScheme}`);
        const found = await tourEveryView(page);
        expect(Object.keys(found)).toEqual(['Payouts', 'Reconciliation', 'Wallet adjustments', 'Developers', 'Stripe']);
        expect(found).toEqual(Object.fromEntries(Object.keys(found).map((label) => [label, []])));
        ui.expectClean();
      } finally {
        await ui.close();
      }
    });
  }
});
