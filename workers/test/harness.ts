/**
 * The one place Workers-runtime tests get their world from: a database of their own (cloned from
 * the migrated, seeded template), the apps, requests with an execution context, sessions, SQL.
 */
import { Client, Pool } from '@neondatabase/serverless';
import { createExecutionContext, env as cloudflareEnv, waitOnExecutionContext } from 'cloudflare:test';
import { createApiApp } from '../api/src/app.ts';
import { sha256Hex } from '#shared/crypto.ts';
import { configureLocalProxy, createDatabase } from '#shared/db.ts';
import type { Env } from '#shared/env.ts';
import { createGatewayApp } from '../gateway/src/app.ts';
import { templateDatabase, testSecrets } from '../../tests/setup/test-secrets.ts';

export type TestEnv = Env & { DATABASE_URL: string };

/** The bindings of wrangler.toml [env.test] plus those vitest.config.ts passes from the global setup. */
const env = cloudflareEnv as unknown as Env & { TEST_DATABASE_ADMIN_URL: string; TEST_DATABASE_URL_PREFIX: string };
type App = { fetch(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response> };

export const adminToken = testSecrets.ADMIN_TOKEN;
export const developerKey = testSecrets.DEMO_DEVELOPER_KEY;
export const demoPublicAppId = 'app_demo_local';

function configureProxy(): void {
  configureLocalProxy(env.DATABASE_WS_PROXY!);
}

/** A fresh database cloned from the seeded template, and the test env pointing at it. */
export async function createTestEnv(overrides: Partial<Env> = {}): Promise<TestEnv> {
  configureProxy();
  const name = `t_${crypto.randomUUID().replace(/-/g, '')}`;
  const client = new Client(env.TEST_DATABASE_ADMIN_URL);
  await client.connect();
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(`create database "${name}" template "${templateDatabase}"`);
        break;
      } catch (error) {
        // Two clones of one template at the same instant can collide; try again shortly.
        if (attempt >= 10 || !/being accessed by other users/.test((error as Error).message)) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
      }
    }
  } finally {
    await client.end();
  }
  return { ...env, DATABASE_URL: `${env.TEST_DATABASE_URL_PREFIX}${name}`, ...overrides } as TestEnv;
}

let apiApp: ReturnType<typeof createApiApp> | undefined;
let gatewayApp: ReturnType<typeof createGatewayApp> | undefined;
export const api = () => (apiApp ??= createApiApp());
export const gateway = () => (gatewayApp ??= createGatewayApp());

export interface CallOptions extends RequestInit {
  json?: unknown;
  token?: string;
}

/** Sends one request through an app with a real execution context and waits for its `waitUntil`s. */
export async function call(app: App, testEnv: Env, path: string, options: CallOptions = {}): Promise<Response> {
  const { json, token, ...init } = options;
  const headers = new Headers(init.headers);
  if (json !== undefined) {
    headers.set('content-type', 'application/json');
    init.body = JSON.stringify(json);
    init.method ??= 'POST';
  }
  if (token) headers.set('authorization', `Bearer ${token}`);
  const ctx = createExecutionContext();
  const response = await app.fetch(new Request(`http://faucet.test${path}`, { ...init, headers }), testEnv, ctx);
  // Buffer the body first so that waitUntil work tied to a streamed body can finish.
  const body = await response.arrayBuffer();
  await waitOnExecutionContext(ctx);
  return new Response(body, { status: response.status, headers: response.headers });
}

/** Runs SQL against the test env's database (assertions, fixtures). */
export async function sql<T = Record<string, unknown>>(testEnv: TestEnv, text: string, params: unknown[] = []): Promise<T[]> {
  configureProxy();
  const pool = new Pool({ connectionString: testEnv.DATABASE_URL, max: 1 });
  try {
    const { rows } = await pool.query(text, params);
    return rows as T[];
  } finally {
    await pool.end();
  }
}

/** A session for a (by default new, random) end user of the demo app, minted as its developer's backend does. */
export async function createSession(testEnv: TestEnv, externalUserId = `user-${crypto.randomUUID()}`) {
  const response = await call(api(), testEnv, '/v1/sessions', {
    json: { public_app_id: demoPublicAppId, external_user_id: externalUserId },
    token: developerKey,
  });
  if (response.status !== 201) throw new Error(`session creation failed: ${response.status} ${await response.text()}`);
  const body = (await response.json()) as { session_token: string; expires_at: string; session_id: string; user_ref: string };
  const [row] = await sql<{ wallet_id: string; end_user_id: string }>(
    testEnv,
    `select w.id as wallet_id, s.end_user_id from virtual_sessions s join wallets w on w.end_user_id = s.end_user_id
      where s.token_hash = $1`,
    [await sha256Hex(body.session_token)],
  );
  return {
    token: body.session_token,
    expiresAt: body.expires_at,
    sessionId: body.session_id,
    userRef: body.user_ref,
    walletId: row!.wallet_id,
    endUserId: row!.end_user_id,
  };
}

/** Ids of the seed's demo rows. */
export async function demoFixture(testEnv: TestEnv) {
  const [row] = await sql<{ app_id: string; developer_id: string; developer_wallet_id: string; demo_wallet_id: string }>(
    testEnv,
    `select a.id as app_id, a.developer_id,
            (select id from wallets where developer_id = a.developer_id) as developer_wallet_id,
            (select w.id from wallets w join end_users u on u.id = w.end_user_id where u.app_id = a.id
              order by u.created_at limit 1) as demo_wallet_id
       from apps a where a.public_app_id = $1`,
    [demoPublicAppId],
  );
  return row!;
}

export { createDatabase };
