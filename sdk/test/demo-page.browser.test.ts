import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type {} from '../../tests/setup/node-stack.ts';
import { startDemoServer, type DemoServer } from '../demo/serve.ts';
import { startFakeUpstream, type FakeUpstream } from '../../bridge/test/support/fake-upstream.ts';
import { freePort } from '../../bridge/test/support/listen.ts';
import { startTestBridge, type TestBridge } from '../../bridge/test/support/start-test-bridge.ts';
import { launchChromium } from './chromium.ts';

const repoRoot = join(import.meta.dirname, '..', '..');

/** The demo page served against the real local stack of the node project's global setup. */
const stack = inject('stack');
let demo: DemoServer;
let upstream: FakeUpstream;
let bridge: TestBridge;
let browser: Browser;
let page: Page;
let traffic: Traffic;

/** What a page asked of its own server and, through it, of the stack. */
interface Traffic {
  requests: Array<{ path: string; body: string; headers: string }>;
  /** The `session_id`s the demo server's `POST /demo-session` answered. */
  mintedSessionIds: string[];
  /** Answers of the stack that refused a session (401). */
  refused: string[];
}

function watch(target: Page): Traffic {
  const traffic: Traffic = { requests: [], mintedSessionIds: [], refused: [] };
  target.on('request', (request) => {
    traffic.requests.push({
      path: new URL(request.url()).pathname,
      body: request.postData() ?? '',
      headers: JSON.stringify(request.headers()),
    });
  });
  target.on('response', async (response) => {
    const path = new URL(response.url()).pathname;
    if (response.status() === 401) traffic.refused.push(path);
    if (path === '/demo-session' && response.ok())
      traffic.mintedSessionIds.push(((await response.json()) as { session_id: string }).session_id);
  });
  return traffic;
}

const requestsTo = (traffic: Traffic, path: string) => traffic.requests.filter((request) => request.path === path);

/** Sends a chat message on `target` and waits for the model's (echoed) answer. */
async function say(target: Page, text: string): Promise<void> {
  const chat = target.getByRole('region', { name: 'Chat' });
  await chat.getByLabel('Message', { exact: true }).fill(text);
  await chat.getByLabel('Message', { exact: true }).press('Enter');
  await chat.locator('.faucet-chat__message--assistant[data-status="done"]', { hasText: `Echo: ${text}` }).waitFor();
}

/** Runs SQL on the stack's database: the test's way to let sessions expire without waiting for their TTL. */
async function onDatabase<T extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<T[]> {
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Moves the sessions' expiry into the past, as time would. A wallet object that read a session
 * keeps its expiry for at most 10 s before reading it again (docs/edge.md); a session that really
 * expires is refused at its expiry from that copy, but this one's expiry moved, so the test lets the
 * copy lapse.
 */
async function expireSessions(where: string, values: unknown[]) {
  await onDatabase(`update virtual_sessions set expires_at = now() - interval '1 second' where ${where}`, values);
  await new Promise((resolve) => setTimeout(resolve, 10_500));
}

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
  traffic = watch(page);
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

describe('demo page with a session minted by the app backend (policy server)', { timeout: 60_000 }, () => {
  it('gets its session from its own server, which holds the developer key; the key never reaches the browser', async () => {
    await say(page, 'Minted by the backend');
    expect(traffic.mintedSessionIds.length).toBeGreaterThanOrEqual(1);
    expect(requestsTo(traffic, '/api/v1/sessions')).toEqual([]);
    for (const request of traffic.requests) expect(request.headers + request.body).not.toContain(stack.developerKey);
    expect(await page.content()).not.toContain(stack.developerKey);
  });

  it('when the session expires, the next call is refused once, gets a new session from the backend and succeeds', async () => {
    const minted = traffic.mintedSessionIds.length;
    const refused = traffic.refused.length;
    await expireSessions('id = any($1::uuid[])', [traffic.mintedSessionIds]);
    await say(page, 'After my session expired');
    expect(traffic.refused.length).toBeGreaterThan(refused);
    expect(traffic.mintedSessionIds.length).toBeGreaterThan(minted);
  });
});

describe('demo page of a signed app (a user token its server signs)', { timeout: 60_000 }, () => {
  const userId = `signed-user-${crypto.randomUUID()}`;
  let signedDemo: DemoServer;
  let signedPage: Page;
  let signedTraffic: Traffic;
  let publicAppId: string;

  /** The developer's API, with the demo developer's key (it owns the new app too). */
  async function developerCall(method: string, path: string, body: unknown) {
    const response = await fetch(`${stack.apiUrl}/v1/developer/apps/${publicAppId}${path}`, {
      method,
      headers: { authorization: `Bearer ${stack.developerKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status}`);
    return (await response.json()) as Record<string, unknown>;
  }

  beforeAll(async () => {
    // A second app of the demo developer, so the demo app itself stays `server` for the other tests.
    publicAppId = `app_signed_${crypto.randomUUID().slice(0, 8)}`;
    await onDatabase(
      `with app as (
         insert into apps (developer_id, public_app_id, name) select developer_id, $2, 'Signed demo' from apps where public_app_id = $1 returning id)
       insert into app_features (app_id, feature_key, name, default_model) select id, $3, 'Chat', 'mock:echo' from app`,
      [stack.publicAppId, publicAppId, stack.featureKey],
    );
    const signingSecret = (await developerCall('POST', '/signing-secrets', {})).signing_secret as string;
    await developerCall('PATCH', '/session-policy', { session_policy: 'signed' });

    // Fund the user as a test would: a session of its own from a token signed the same way, then test money.
    const userToken = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(userId)
      .setAudience(publicAppId)
      .setIssuedAt()
      .setNotBefore('0s')
      .setExpirationTime('2m')
      .sign(new TextEncoder().encode(signingSecret));
    const session = await fetch(`${stack.apiUrl}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ public_app_id: publicAppId, user_token: userToken }),
    });
    const token = ((await session.json()) as { session_token: string }).session_token;
    const wallet = (await (await fetch(`${stack.apiUrl}/v1/user/wallet`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      wallet_id: string;
    };
    const credit = await fetch(`${stack.apiUrl}/v1/admin/wallets/${wallet.wallet_id}/credit-test-balance`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount_usd: '1.00000000' }),
    });
    if (!credit.ok) throw new Error(`credit: HTTP ${credit.status}`);

    signedDemo = await startDemoServer({
      port: await freePort(),
      apiBaseUrl: stack.apiUrl,
      gatewayBaseUrl: stack.gatewayUrl,
      publicAppId,
      signingSecret,
      userId,
      featureKey: stack.featureKey,
      bridgeUrl: bridge.url,
    });
    signedPage = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    signedPage.setDefaultTimeout(45_000);
    signedTraffic = watch(signedPage);
    await signedPage.goto(signedDemo.url);
  }, 60_000);

  afterAll(async () => {
    await signedPage?.close();
    await signedDemo?.close();
  });

  it('the app takes no session for a bare user id (its policy is signed)', async () => {
    const response = await fetch(`${stack.apiUrl}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ public_app_id: publicAppId, external_user_id: userId }),
    });
    expect(response.status).toBe(401);
  });

  it('exchanges the user token its server signed for a session, and a call works', async () => {
    await say(signedPage, 'Hello with a signed token');
    expect(requestsTo(signedTraffic, '/demo-user-token')).toHaveLength(1);
    const exchanges = requestsTo(signedTraffic, '/api/v1/sessions');
    expect(exchanges).toHaveLength(1);
    expect(Object.keys(JSON.parse(exchanges[0]!.body) as object).sort()).toEqual(['public_app_id', 'user_token']);
    expect(requestsTo(signedTraffic, '/demo-session')).toEqual([]);
  });

  it('when the session expires, the next call signs a new user token, exchanges it and succeeds', async () => {
    const refused = signedTraffic.refused.length;
    await expireSessions(
      'end_user_id in (select s.end_user_id from virtual_sessions s join apps a on a.id = s.app_id where a.public_app_id = $1)',
      [publicAppId],
    );
    await say(signedPage, 'After the signed session expired');
    expect(signedTraffic.refused.length).toBeGreaterThan(refused);
    expect(requestsTo(signedTraffic, '/demo-user-token')).toHaveLength(2);
    expect(requestsTo(signedTraffic, '/api/v1/sessions')).toHaveLength(2);
  });

  it("when the developer revokes the user's sessions, the next call does the same", async () => {
    const revoked = await developerCall('POST', '/users/revoke-sessions', { external_user_id: userId });
    expect(revoked.revoked_sessions).toBeGreaterThanOrEqual(1);
    await say(signedPage, 'After the developer revoked my session');
    expect(requestsTo(signedTraffic, '/demo-user-token')).toHaveLength(3);
    expect(requestsTo(signedTraffic, '/api/v1/sessions')).toHaveLength(3);
  });
});
