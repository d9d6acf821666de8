/**
 * The console's frame in Chromium against the local stack: sign-in refusals show the API's message,
 * a developer key opens the developer view, the credential never lands in the URL, the theme toggles,
 * and the sign-in screen passes axe in light and dark (on a phone too).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, openConsole, screenshot, seriousViolations, signIn, stack } from './browser.ts';

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

describe('console frame', { timeout: 180_000 }, () => {
  it('refuses a wrong developer key with the API envelope message, then signs in with the right one', async () => {
    const ui = await openConsole(browser);
    const { page } = ui;
    try {
      expect(await seriousViolations(page)).toEqual([]);
      ui.allowStatus(/^\/api\/v1\/developer\/wallet$/, 401);
      await page.getByLabel('Developer key').fill('fdk_not_a_real_key_0000000000000000');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/^Not a valid developer key: .+\(request [\w-]+\)$/);

      await page.getByLabel('Developer key').fill(stack.developerKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      const loaded = page.getByRole('definition').filter({ hasText: '$' }).first();
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
      await page.getByLabel('Totals of the period').waitFor();
      await loaded.waitFor();
      expect(page.url()).toBe(`${stack.consoleUrl}/#/developer`);
      expect(page.url()).not.toContain(stack.developerKey);

      // Kept for this tab only; a reload stays signed in.
      await page.reload();
      await page.getByLabel('Totals of the period').waitFor();
      await loaded.waitFor();
      const theme = () => page.evaluate(() => document.documentElement.dataset.theme);
      expect(await theme()).toBe('light');
      await page.getByRole('button', { name: 'Dark theme' }).click();
      expect(await theme()).toBe('dark');
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'sign-in-dark');
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });

  for (const colorScheme of ['light', 'dark'] as const) {
    it(`the sign-in screen on a phone in ${colorScheme} mode: no serious or critical axe violation, no sideways scroll`, async () => {
      const ui = await openConsole(browser, { viewport: { width: 390, height: 844 }, colorScheme });
      const { page } = ui;
      try {
        await page.getByRole('button', { name: 'Sign in' }).waitFor();
        expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe(colorScheme);
        expect(await seriousViolations(page)).toEqual([]);
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
        await screenshot(page, `sign-in-phone-${colorScheme}`);
        ui.expectClean();
      } finally {
        await ui.close();
      }
    });
  }

  it('an operator signs in with the admin token; a developer key is not the admin token', async () => {
    const ui = await openConsole(browser, { colorScheme: 'dark' });
    const { page } = ui;
    try {
      expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
      ui.allowStatus(/^\/api\/v1\/admin\/developers$/, 401);
      await page.getByRole('radio', { name: 'Operator' }).check();
      await page.getByLabel('Admin token').fill(stack.developerKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/^Not the admin token: /);
      await signIn(page, 'operator', stack.adminToken);
      expect(page.url()).toMatch(/#\/operator$/);
      ui.expectClean();
    } finally {
      await ui.close();
    }
  });
});
