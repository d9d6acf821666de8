/**
 * Gateway-specific test helpers over the shared harness: an app with an intercepted upstream,
 * funded sessions, chat calls, and reads of wallets and usage records.
 */
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { getWalletBalance } from '#shared/ledger/index.ts';
import { formatUsd } from '#shared/money/index.ts';
import { call, createDatabase, createSession, sql, type TestEnv } from './harness.ts';
import { fund } from './ledger-kit.ts';

export { fund };
import { createGatewayApp } from '../gateway/src/app.ts';
import type { GatewayDependencies } from '../gateway/src/gateway-dependencies.ts';

export type GatewayApp = ReturnType<typeof createGatewayApp>;

export function gatewayWith(dependencies: Partial<GatewayDependencies> = {}): GatewayApp {
  return createGatewayApp(dependencies);
}

/** A new end user of the demo app with `balanceUsd` in their wallet. */
export async function fundedSession(testEnv: TestEnv, balanceUsd = '1.00000000') {
  const session = await createSession(testEnv);
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

export async function holdStatus(testEnv: TestEnv, requestId: string): Promise<string | undefined> {
  // Holds are keyed by the server's money key; the test knows the client's request id.
  const [row] = await sql<{ status: string }>(
    testEnv,
    `select h.status from balance_holds h join gateway_calls g on g.money_key = h.request_id
      where g.client_request_id = $1 order by g.created_at desc limit 1`,
    [requestId],
  );
  return row?.status;
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

/** Reads the `data:` payloads of a whole SSE body. */
export function sseData(text: string): string[] {
  return text
    .split(/\n\n/)
    .map((event) => event.trim())
    .filter((event) => event.startsWith('data: '))
    .map((event) => event.slice('data: '.length));
}

export const userMessage = (content: string) => ({ role: 'user' as const, content });
