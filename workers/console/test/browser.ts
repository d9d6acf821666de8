/**
 * The console's browser-test harness: Debian's Chromium (playwright-core) on the console of the
 * node project's local stack, with what every test checks — no console errors, no failed requests
 * (network failures or answers >= 400 a test did not declare; the 404 of an app without a trace
 * export is an answer, not a failure), an axe-core scan with no serious or critical violation — and a
 * screenshot under test-results/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import axe from 'axe-core';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect, inject } from 'vitest';
import type {} from '../../../tests/setup/node-stack.ts';

export const stack = inject('stack');
const resultsDir = join(import.meta.dirname, '..', '..', '..', 'test-results');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

export interface ConsolePage {
  page: Page;
  /** Lets answers of `status` to a URL matching `path` through (a test that provokes a validation error). */
  allowStatus(path: RegExp, status: number): void;
  /** Fails the test on any console error or failed request seen so far. */
  expectClean(): void;
  close(): Promise<void>;
}

export async function openConsole(
  browser: Browser,
  options: { viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark'; timezoneId?: string } = {},
): Promise<ConsolePage> {
  if (!stack.consoleUrl) throw new Error('the node stack was started without the console');
  const context = await browser.newContext({
    viewport: options.viewport ?? { width: 1280, height: 900 },
    colorScheme: options.colorScheme ?? 'light',
    ...(options.timezoneId ? { timezoneId: options.timezoneId } : {}),
    ...(options.viewport && options.viewport.width < 500 ? { isMobile: true, hasTouch: true } : {}),
  });
  const page = await context.newPage();
  // The stack shares two cores with everything else under test.
  page.setDefaultTimeout(60_000);
  const allowed: Array<{ path: RegExp; status: number; method?: string }> = [
    // How the API says an app exports no traces: the Apps view reads it as such for the chosen app.
    { path: /^\/api\/v1\/developer\/apps\/[^/]+\/traces$/, status: 404, method: 'GET' },
  ];
  const problems: string[] = [];
  const isAllowed = (url: string, status: number, method: string) =>
    allowed.some(
      (rule) => rule.status === status && (rule.method === undefined || rule.method === method) && rule.path.test(new URL(url).pathname),
    );
  const failedUrls = new Set<string>();
  page.on('response', (response) => {
    if (response.status() < 400) return;
    if (isAllowed(response.url(), response.status(), response.request().method())) failedUrls.add(response.url());
    else problems.push(`HTTP ${response.status()} ${response.request().method()} ${new URL(response.url()).pathname}`);
  });
  page.on('requestfailed', (request) =>
    problems.push(`request failed: ${request.method()} ${new URL(request.url()).pathname} (${request.failure()?.errorText})`),
  );
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    // Chromium reports each answer >= 400 as a console error; declared ones are expected.
    if (/Failed to load resource/.test(message.text()) && failedUrls.has(message.location().url)) return;
    problems.push(`console error: ${message.text()}`);
  });
  await page.goto(stack.consoleUrl);
  return {
    page,
    allowStatus: (path, status) => allowed.push({ path, status }),
    expectClean: () => expect(problems).toEqual([]),
    close: () => context.close(),
  };
}

/** Signs in on the sign-in screen and waits for the role's first view. */
export async function signIn(page: Page, role: 'developer' | 'operator', credential: string): Promise<void> {
  await page.getByRole('radio', { name: role === 'developer' ? 'Developer' : 'Operator' }).check();
  await page.getByLabel(role === 'developer' ? 'Developer key' : 'Admin token').fill(credential);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
}

/** Runs axe-core on the page; returns the serious and critical violations (expect them to be empty). */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: axe.source });
  const violations = await page.evaluate(async () => {
    const result = await (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      targets: violation.nodes.slice(0, 3).map((node) => node.target.join(' ')),
    }));
  });
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.impact} ${violation.id}: ${violation.targets.join(', ')}`);
}

/** Saves a full-page screenshot as test-results/console-<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(resultsDir, { recursive: true });
  await page.screenshot({ path: join(resultsDir, `console-${name}.png`), fullPage: true });
}

/**
 * Opens every view of the signed-in role's nav in turn (what the nav lists, so a new view is covered
 * too) and waits until it has loaded; answers, per view, what is wrong: serious or critical axe
 * violations, or a page wider than the viewport (sideways scrolling on a phone).
 */
export async function tourEveryView(page: Page): Promise<Record<string, string[]>> {
  const nav = page.getByRole('navigation', { name: 'Console' });
  const labels = await nav.getByRole('link').allTextContents();
  expect(labels.length).toBeGreaterThan(1);
  const found: Record<string, string[]> = {};
  for (const label of labels) {
    await nav.getByRole('link', { name: label, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: label }).waitFor();
    // Loaded: no "Loading …" line left in the view (lazy chunk, then the view's reads).
    await page.waitForFunction(() => !/Loading [^…]*…/.test(document.querySelector('main')?.textContent ?? ''));
    const problems = await seriousViolations(page);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    const viewport = page.viewportSize()?.width ?? Number.POSITIVE_INFINITY;
    if (width > viewport) problems.push(`page is ${width}px wide on a ${viewport}px screen`);
    found[label] = problems;
  }
  return found;
}
