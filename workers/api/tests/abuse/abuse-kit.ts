/**
 * What the abuse tests share: the list of every route the API and the gateway serve (read from the
 * apps themselves, so a new endpoint is covered without editing this file), who may call each, a
 * valid body per route to mutate, two tenants with resources, and a fingerprint of every row of the
 * database to prove a refused request changed nothing.
 */
import { sha256Hex } from '#shared/crypto.ts';
import type { Database } from '#shared/db.ts';
import { adminToken, api, call, createDatabase, createSession, developerKey, gateway, sql, type TestEnv } from '../../../test/harness.ts';
import { createApiApp } from '../../src/app.ts';
import { fund } from '../../../test/ledger-kit.ts';

export type Caller = 'public' | 'session' | 'developer' | 'admin' | 'stripe';

export interface Endpoint {
  service: 'api' | 'gateway';
  method: string;
  /** Hono pattern, e.g. `/v1/user/provider-keys/:id`. */
  path: string;
  caller: Caller;
}

type RoutedApp = { routes: Array<{ method: string; path: string }> };

function routesOf(service: Endpoint['service'], app: RoutedApp): Endpoint[] {
  const seen = new Map<string, Endpoint>();
  for (const route of app.routes) {
    if (route.method === 'ALL' || route.path.includes('*')) continue;
    seen.set(`${route.method} ${route.path}`, { service, method: route.method, path: route.path, caller: callerOf(service, route.path) });
  }
  return [...seen.values()];
}

export function callerOf(service: Endpoint['service'], path: string): Caller {
  if (path.startsWith('/v1/admin/')) return 'admin';
  if (path.startsWith('/v1/developer/')) return 'developer';
  if (path.startsWith('/v1/user/') || path === '/v1/usage/local') return 'session';
  if (path === '/v1/webhooks/stripe') return 'stripe';
  if (service === 'gateway' && path === '/v1/chat/completions') return 'session';
  return 'public';
}

/** Every route of both workers. */
export function allEndpoints(): Endpoint[] {
  return [...routesOf('api', createApiApp()), ...routesOf('gateway', gateway())];
}

export const appOf = (endpoint: Endpoint) => (endpoint.service === 'api' ? api() : gateway());

/** Fills `:name` segments. */
export function fillPath(path: string, value: (name: string) => string): string {
  return path.replace(/:([A-Za-z_]+)(\{[^}]*\})?/g, (_match, name: string) => value(name));
}

/** `userRef`: the `user_ref` of the session the body is sent with (local usage reports must name it). */
export function validBody(endpoint: Endpoint, userRef = '0'.repeat(64)): unknown {
  const key = `${endpoint.method} ${endpoint.path}`;
  const bodies: Record<string, unknown> = {
    'POST /v1/sessions': { public_app_id: 'app_demo_local', external_user_id: 'fuzz-user' },
    'POST /v1/user/provider-keys': { provider: 'openai', api_key: `sk-proj-${'F'.repeat(40)}`, label: 'fuzz' },
    'POST /v1/developer/provider-keys': { provider: 'openai', api_key: `sk-proj-${'G'.repeat(40)}`, monthly_budget_usd: '5.00000000' },
    'POST /v1/user/stripe/checkout-sessions': { amount_usd: '10.00000000' },
    'POST /v1/usage/local': localUsageReport('fuzz-local-1', userRef),
    'POST /v1/admin/wallets/:wallet_id/adjustments': { kind: 'adjustment', direction: 'credit', amount_usd: '1.00000000', reason: 'fuzz' },
    'POST /v1/admin/wallets/:id/credit-test-balance': { amount_usd: '1.00000000' },
    'POST /v1/admin/payouts/run-mock': { threshold_usd: '1.00000000' },
    'POST /v1/admin/payouts/:id/approve': { operator_note: 'fuzz' },
    'POST /v1/admin/payouts/:id/mark-paid': {},
    'POST /v1/developer/webhooks': { url: 'https://hooks.example.com/fuzz', event_types: ['*'] },
    'PUT /v1/developer/apps/:public_app_id/alerts': { low_balance_threshold_usd: '1.00000000' },
    'POST /v1/chat/completions': { model: 'mock:echo', feature: 'chat', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
  };
  return bodies[key] ?? {};
}

export interface Tenant {
  sessionToken: string;
  walletId: string;
  endUserId: string;
  /** The session's `user_ref`, which local usage reports name. */
  userRef: string;
  userKeyId: string;
}

export interface World {
  a: Tenant;
  b: Tenant;
  expiredSessionToken: string;
  developerKeyA: string;
  developerKeyB: string;
  developerKeyIdA: string;
  adminToken: string;
}

async function tenant(testEnv: TestEnv): Promise<Tenant> {
  const session = await createSession(testEnv);
  // Funded, so that a valid call is served: the suites check that a *refused* request changes nothing.
  await fund(testEnv, session.walletId, '5.00000000');
  const response = await call(api(), testEnv, '/v1/user/provider-keys', {
    token: session.token,
    json: { provider: 'openai', api_key: `sk-proj-${crypto.randomUUID().replace(/-/g, '')}abcdef`, label: 'mine' },
  });
  if (response.status !== 201) throw new Error(`user key: ${response.status} ${await response.text()}`);
  const key = (await response.json()) as { id: string };
  return {
    sessionToken: session.token,
    walletId: session.walletId,
    endUserId: session.endUserId,
    userRef: session.userRef,
    userKeyId: key.id,
  };
}

/** Two end users with a key each, an expired session, two developers (B is a second tenant) with a key of A. */
export async function buildWorld(testEnv: TestEnv): Promise<World> {
  const a = await tenant(testEnv);
  const b = await tenant(testEnv);
  const expired = await createSession(testEnv);
  await sql(testEnv, `update virtual_sessions set expires_at = now() - interval '1 second' where end_user_id = $1`, [expired.endUserId]);
  const developerKeyB = `fdk_second_tenant_${crypto.randomUUID().replace(/-/g, '')}`;
  await sql(
    testEnv,
    `with d as (insert into developers (name, email) values ('Second', $2) returning id),
     k as (insert into developer_keys (developer_id, key_hash, prefix) select id, $1, 'fdk_second' from d)
     insert into wallets (kind, developer_id) select 'developer', id from d`,
    [await sha256Hex(developerKeyB), `second-${crypto.randomUUID()}@example.test`],
  );
  const response = await call(api(), testEnv, '/v1/developer/provider-keys', {
    token: developerKey,
    json: { provider: 'anthropic', api_key: `sk-ant-api03-${'D'.repeat(40)}`, monthly_budget_usd: '5.00000000' },
  });
  if (response.status !== 201) throw new Error(`developer key: ${response.status} ${await response.text()}`);
  const developerKeyIdA = ((await response.json()) as { id: string }).id;
  return { a, b, expiredSessionToken: expired.token, developerKeyA: developerKey, developerKeyB, developerKeyIdA, adminToken };
}

/**
 * One digest per table over every row, so any insert, update or delete shows (a developer key's
 * `last_used_at` aside). Keeps one connection
 * per test env open (a fresh one per call would dominate the fuzzer's time).
 */
const fingerprintQueries = new Map<string, { pool: Database['pool']; query?: string }>();

export async function databaseFingerprint(testEnv: TestEnv): Promise<Record<string, string>> {
  let entry = fingerprintQueries.get(testEnv.DATABASE_URL);
  if (!entry) {
    const { pool } = createDatabase({ ...testEnv, DATABASE_URL: testEnv.DATABASE_URL });
    entry = { pool };
    fingerprintQueries.set(testEnv.DATABASE_URL, entry);
  }
  if (!entry.query) {
    const { rows: tables } = await entry.pool.query<{ table_name: string }>(
      `select table_name from information_schema.tables
        where table_schema = 'public' and table_type = 'BASE TABLE' and table_name <> 'schema_migrations' order by 1`,
    );
    // A key's `last_used_at` records that it was presented, refused request or not: not a change the request made.
    const rowText = (table: string) => (table === 'developer_keys' ? `(to_jsonb(t) - 'last_used_at')::text` : 't::text');
    entry.query = tables
      .map(
        ({ table_name }) =>
          `select '${table_name}' as name, md5(coalesce(string_agg(${rowText(table_name)}, '|' order by ${rowText(table_name)}), '')) as digest from "${table_name}" t`,
      )
      .join(' union all ');
  }
  const { rows } = await entry.pool.query<{ name: string; digest: string }>(entry.query);
  return Object.fromEntries(rows.map((row) => [row.name, row.digest]));
}

/** A well-formed local usage report of the demo app's user whose session answered `userRef` (the contract's fields, no prompt content). */
export function localUsageReport(requestId: string, userRef: string) {
  return {
    request_id: requestId,
    public_app_id: 'app_demo_local',
    user_id_hash: userRef,
    route_mode: 'local',
    provider: 'ollama',
    model: 'llama3.2',
    input_tokens: 3,
    output_tokens: 4,
    estimated: false,
    occurred_at: '2026-11-22T01:00:00.000Z',
  };
}
