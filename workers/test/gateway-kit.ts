/**
 * Gateway-specific test helpers over the shared harness: an env on the path production takes (wallet
 * leases on), an app with an intercepted upstream, funded sessions, chat calls, the wallet objects'
 * settlements booked on demand, and reads of wallets and usage records.
 */
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { expect } from 'vitest';
import type { Env } from '#shared/env.ts';
import { getWalletBalance } from '#shared/ledger/index.ts';
import { addUsd, formatUsd, parseDatabaseAmount, parseWireAmount, type Usd, zeroUsd } from '#shared/money/index.ts';
import { walletOfToken } from '#shared/auth/session-token.ts';
import { call, createDatabase, createSession, createTestEnv, sql, type TestEnv } from './harness.ts';
import { fund } from './ledger-kit.ts';

export { fund };
import { createGatewayApp } from '../gateway/src/app.ts';
import type { GatewayDependencies } from '../gateway/src/gateway-dependencies.ts';

export type GatewayApp = ReturnType<typeof createGatewayApp>;

export function gatewayWith(dependencies: Partial<GatewayDependencies> = {}): GatewayApp {
  return createGatewayApp(dependencies);
}

/**
 * A database of the test's own: the end user's wallet object authorizes each call on its lease, as
 * in production (there is no other path). Read the ledger after `settled`.
 */
export function gatewayTestEnv(overrides: Partial<Env> = {}): Promise<TestEnv> {
  return createTestEnv(overrides);
}

/**
 * The ledger as it stands once every call that has ended is booked. On the lease path a settled call
 * is booked when its wallet object flushes (on its own within a second); here every object that holds
 * or held a lease in the last day books what it settled now and gives its lease back but the worst
 * cases of calls still in flight (a recall) — so `held` is what calls in flight hold, as on the
 * per-call path. An object that cannot book what it settled fails the test.
 */
export async function settled(testEnv: TestEnv): Promise<void> {
  const namespace = testEnv.WALLET;
  if (namespace === undefined) return;
  const rows = await sql<{ name: string }>(
    testEnv,
    `select substr(request_id, length('lease:') + 1) as name from balance_holds
      where request_id like 'lease:%' and expires_at > now() - interval '1 day'`,
  );
  await Promise.all(
    rows.map(async ({ name }) => {
      const object = namespace.get(namespace.idFromName(name));
      const after = await object.recall();
      await object.resume();
      if (after.unflushed > 0 || after.refused > 0) {
        throw new Error(`a wallet object kept ${after.unflushed} settled and ${after.refused} refused calls unbooked`);
      }
    }),
  );
}

/**
 * Once every call has settled, the wallet holds nothing (no call's worst case, on a hold of its own or
 * in its wallet object's lease) and nothing is booked under the request id: what a refused call, or one
 * the upstream never accepted, leaves behind on either path.
 */
export async function expectNothingHeldOrBooked(testEnv: TestEnv, walletId: string, requestId: string): Promise<void> {
  await settled(testEnv);
  expect((await wallet(testEnv, walletId)).held).toBe('0.00000000');
  expect(await usageRows(testEnv, requestId)).toEqual([]);
}

/**
 * What a wallet sets aside for its calls right now, whichever path authorized them: the holds of calls
 * in flight on the per-call path, plus what the wallet object commits (the worst cases of calls in
 * flight on its lease, and the charges it has not booked yet) — not the unused part of a lease.
 */
export async function heldForCalls(testEnv: TestEnv, session: { token: string; walletId: string }): Promise<Usd> {
  const [row] = await sql<{ held: string }>(
    testEnv,
    `select coalesce(sum(amount), 0)::numeric(20, 8)::text as held from balance_holds
      where wallet_id = $1 and status = 'active' and request_id not like 'lease:%'`,
    [session.walletId],
  );
  const snapshot = await walletObjectSnapshot(testEnv, session.token);
  return addUsd(parseDatabaseAmount(row!.held), snapshot === undefined ? zeroUsd() : parseWireAmount(snapshot.committedUsd));
}

/**
 * What a developer key's monthly budget sets aside for one end user's calls right now, whichever path
 * authorized them: the reservations of their calls not yet booked on the per-call path, plus what
 * their wallet object commits on the key's budget lease — not the unused part of that lease.
 */
export async function reservedForCalls(
  testEnv: TestEnv,
  session: { token: string; endUserId: string },
  credentialId: string,
): Promise<Usd> {
  const [row] = await sql<{ reserved: string }>(
    testEnv,
    `select coalesce(sum(r.amount), 0)::numeric(20, 8)::text as reserved
       from provider_credential_reservations r join gateway_calls g on g.money_key = r.request_id
      where r.credential_id = $1 and g.end_user_id = $2
        and not exists (select 1 from usage_events u where u.request_id = r.request_id)`,
    [credentialId, session.endUserId],
  );
  const budget = (await walletObjectSnapshot(testEnv, session.token))?.keyBudgets[credentialId];
  return addUsd(parseDatabaseAmount(row!.reserved), budget === undefined ? zeroUsd() : parseWireAmount(budget.committedUsd));
}

/** The wallet object a session token names, as it stands (none for a token of the older form). */
function walletObjectSnapshot(testEnv: TestEnv, token: string) {
  const name = walletOfToken(token);
  const namespace = testEnv.WALLET;
  return name === null || namespace === undefined ? undefined : namespace.get(namespace.idFromName(name)).snapshot();
}

/** A new end user of the demo app with `balanceUsd` in their wallet. */
export async function fundedSession(testEnv: TestEnv, balanceUsd = '1.00000000', externalUserId?: string) {
  const session = await createSession(testEnv, externalUserId);
  if (balanceUsd !== '0.00000000') await fund(testEnv, session.walletId, balanceUsd);
  return session;
}

export async function wallet(testEnv: TestEnv, walletId: string) {
  const { db, pool } = createDatabase(testEnv);
  try {
    const balance = await getWalletBalance(db, walletId);
    if (balance === null) throw new Error(`no wallet ${walletId}`);
    return { balance: formatUsd(balance.balanceUsd), held: formatUsd(balance.heldUsd), available: formatUsd(balance.availableUsd) };
  } finally {
    await pool.end();
  }
}

export interface UsageRow {
  request_id: string;
  feature_key: string;
  route_mode: string;
  provider: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  estimated: boolean;
  retail_usd: string;
  upstream_cost_usd: string;
}

export async function usageRows(testEnv: TestEnv, requestId: string): Promise<UsageRow[]> {
  return sql<UsageRow>(
    testEnv,
    `select client_request_id as request_id, feature_key, route_mode, provider, model, input_tokens, output_tokens, estimated,
            retail_usd::text, upstream_cost_usd::text
       from usage_events where client_request_id = $1`,
    [requestId],
  );
}

export function chat(app: GatewayApp, testEnv: TestEnv, token: string, body: Record<string, unknown>, requestId = newRequestId()) {
  return call(app, testEnv, '/v1/chat/completions', { json: body, token, headers: { 'x-request-id': requestId } });
}

export function newRequestId(): string {
  return `req_test_${crypto.randomUUID().replace(/-/g, '')}`;
}

/**
 * Sends a streaming call and hands back the live response (not buffered) with its execution
 * context, so a test can read part of the stream, cancel it and then wait for the deferred work.
 */
export async function openStream(
  app: GatewayApp,
  testEnv: TestEnv,
  token: string,
  body: Record<string, unknown>,
  requestId = newRequestId(),
) {
  const ctx = createExecutionContext();
  const response = await app.fetch(
    new Request('http://faucet.test/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': requestId },
      body: JSON.stringify({ ...body, stream: true }),
    }),
    testEnv,
    ctx,
  );
  return { response, requestId, finished: () => waitOnExecutionContext(ctx) };
}

/**
 * A POST to the gateway as a client sends it (any surface), read whole and kept alive until its work
 * under waitUntil is done.
 */
export async function postToGateway(app: GatewayApp, testEnv: TestEnv, path: string, body: unknown, headers: Record<string, string>) {
  const ctx = createExecutionContext();
  const response = await app.fetch(
    new Request(`http://faucet.test${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    }),
    testEnv,
    ctx,
  );
  const text = await response.text();
  await waitOnExecutionContext(ctx);
  return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

/** Reads the `data:` payloads of a whole SSE body. */
export function sseData(text: string): string[] {
  return text
    .split(/\n\n/)
    .map((event) => event.trim())
    .filter((event) => event.startsWith('data: '))
    .map((event) => event.slice('data: '.length));
}

export const userMessage = (content: string) => ({ role: 'user' as const, content });

/**
 * Awaits all the work a test's `waitUntil` collected, also work registered while it waits (a call's
 * settlement is registered once its upstream has answered): until nothing new comes within 50 ms.
 */
export async function allRegistered(background: Promise<unknown>[]): Promise<void> {
  for (let awaited = 0; awaited < background.length; ) {
    const registered = background.length;
    await Promise.allSettled(background);
    awaited = registered;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
