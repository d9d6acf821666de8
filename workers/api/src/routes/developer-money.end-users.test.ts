/**
 * GET /v1/developer/end-users: the calling developer's end users only, by user_ref (never a raw id or
 * its stored hash), with spend, request count, wallet balance and last seen; most recently seen
 * first in keyset pages that neither skip nor repeat; ?app= limited to the developer's own apps.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '#shared/crypto.ts';
import { fund } from '../../../test/ledger-kit.ts';
import { adminToken, api, call, createTestEnv, developerKey, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let acmeKey: string;
type Body = Record<string, any>;
const users: Record<string, { userRef: string; externalId: string; endUserId: string; walletId: string }> = {};

const get = async (path: string, token = acmeKey) => {
  const response = await call(api(), testEnv, path, { token });
  return { status: response.status, body: (await response.json()) as Body, requestId: response.headers.get('x-request-id') };
};

async function addUser(name: string, publicAppId: string, seenAt: { session: string; created: string }) {
  const externalId = `${name}@customer.example`;
  const response = await call(api(), testEnv, '/v1/sessions', {
    json: { public_app_id: publicAppId, external_user_id: externalId },
    token: acmeKey,
  });
  expect(response.status).toBe(201);
  const { user_ref: userRef, session_token: token } = (await response.json()) as { user_ref: string; session_token: string };
  const [row] = await sql<{ end_user_id: string; wallet_id: string }>(
    testEnv,
    `select s.end_user_id, w.id as wallet_id from virtual_sessions s join wallets w on w.end_user_id = s.end_user_id
      where s.token_hash = $1`,
    [await sha256Hex(token)],
  );
  await sql(testEnv, 'update end_users set created_at = $2 where id = $1', [row!.end_user_id, seenAt.created]);
  await sql(testEnv, 'update virtual_sessions set created_at = $2 where end_user_id = $1', [row!.end_user_id, seenAt.session]);
  users[name] = { userRef, externalId, endUserId: row!.end_user_id, walletId: row!.wallet_id };
}

async function addUsage(name: string, retail: string, createdAt: string) {
  await sql(
    testEnv,
    `insert into usage_events (request_id, app_id, end_user_id, feature_key, route_mode, provider, model, input_tokens,
       output_tokens, upstream_cost_usd, retail_usd, developer_revenue_usd, platform_share_usd, created_at)
     select $1, u.app_id, u.id, 'chat', 'platform', 'mock', 'echo', 1, 1, 0, $3, 0, $3, $4 from end_users u where u.id = $2`,
    [`usage-${crypto.randomUUID()}`, users[name]!.endUserId, retail, createdAt],
  );
}

beforeAll(async () => {
  testEnv = await createTestEnv();
  const onboarded = await call(api(), testEnv, '/v1/admin/developers', {
    json: { name: 'Acme', email: 'acme@example.test' },
    token: adminToken,
  });
  const acme = (await onboarded.json()) as Body;
  acmeKey = acme.key.api_key;
  for (const publicAppId of ['app_acme_a', 'app_acme_b']) {
    await sql(testEnv, `insert into apps (developer_id, public_app_id, name) values ($1, $2, $2)`, [acme.developer.id, publicAppId]);
  }
  await addUser('alice', 'app_acme_a', { created: '2026-01-01T00:00:00Z', session: '2026-01-02T00:00:00Z' });
  await addUsage('alice', '0.50000000', '2026-01-05T10:00:00.123456Z');
  await addUsage('alice', '0.25000001', '2026-01-04T00:00:00Z');
  await fund(testEnv, users.alice!.walletId, '2.00000000');
  await addUser('bob', 'app_acme_a', { created: '2026-01-01T00:00:00Z', session: '2026-01-03T00:00:00Z' });
  await addUser('carol', 'app_acme_b', { created: '2026-01-01T00:00:00Z', session: '2026-01-04T12:00:00Z' });
  await addUsage('carol', '1.00000000', '2025-12-01T00:00:00Z');
  // Seen at the same instant as bob: the page boundary must split them by id, never skip one.
  await addUser('dave', 'app_acme_a', { created: '2026-01-01T00:00:00Z', session: '2026-01-03T00:00:00Z' });
});

const nameOf = (): Record<string, string> => Object.fromEntries(Object.entries(users).map(([name, user]) => [user.userRef, name]));

describe('GET /v1/developer/end-users', () => {
  it("lists the developer's users with spend, requests, balance and last seen; never a raw id or its stored hash", async () => {
    const page = await get('/v1/developer/end-users');
    expect(page.status).toBe(200);
    expect(page.body.next_cursor).toBeNull();
    const names = nameOf();
    // bob and dave were last seen at the same instant: the higher id first.
    const tied = users.bob!.endUserId > users.dave!.endUserId ? ['bob', 'dave'] : ['dave', 'bob'];
    expect(page.body.data.map((row: Body) => names[row.user_ref])).toEqual(['alice', 'carol', ...tied]);
    const alice = page.body.data[0];
    expect(alice).toEqual({
      user_ref: users.alice!.userRef,
      app: 'app_acme_a',
      spend_usd: '0.75000001',
      requests: 2,
      balance_usd: '2.00000000',
      last_seen_at: '2026-01-05T10:00:00.123456Z',
      created_at: '2026-01-01T00:00:00.000000Z',
    });
    expect(page.body.data[1]).toMatchObject({
      app: 'app_acme_b',
      spend_usd: '1.00000000',
      requests: 1,
      last_seen_at: '2026-01-04T12:00:00.000000Z',
    });
    expect(page.body.data[2]).toMatchObject({ spend_usd: '0.00000000', requests: 0, balance_usd: '0.00000000' });

    const hashes = await sql<{ external_user_hash: string }>(
      testEnv,
      'select external_user_hash from end_users where id = any($1::uuid[])',
      [Object.values(users).map((user) => user.endUserId)],
    );
    const text = JSON.stringify(page.body);
    for (const user of Object.values(users)) {
      expect(text).not.toContain(user.externalId);
      expect(text).not.toContain(user.endUserId);
    }
    for (const { external_user_hash } of hashes) expect(text).not.toContain(external_user_hash);
  });

  it('pages by last seen with a cursor that neither skips nor repeats users seen at the same instant', async () => {
    const whole = (await get('/v1/developer/end-users?limit=100')).body.data as Body[];
    const seen: Body[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const page = await get(`/v1/developer/end-users?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.data);
      cursor = page.body.next_cursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(whole);
    expect(seen).toHaveLength(4);
  });

  it('shows a user seen again at the front of the next first page', async () => {
    await addUsage('dave', '0.10000000', '2026-02-01T00:00:00Z');
    const page = await get('/v1/developer/end-users?limit=1');
    expect(page.body.data[0]).toMatchObject({ user_ref: users.dave!.userRef, last_seen_at: '2026-02-01T00:00:00.000000Z' });
  });

  it("filters by one of the developer's apps; another developer's app or an unknown one is 404", async () => {
    const onlyB = await get('/v1/developer/end-users?app=app_acme_b');
    expect(onlyB.body.data.map((row: Body) => row.user_ref)).toEqual([users.carol!.userRef]);
    for (const app of ['app_demo_local', 'app_nope']) {
      const refused = await get(`/v1/developer/end-users?app=${app}`);
      expect(refused.status).toBe(404);
      expect(refused.body.error).toEqual({ code: 'not_found', message: 'app not found', request_id: refused.requestId });
    }
  });

  it("never shows another developer's users, and the other developer never sees these", async () => {
    const demo = await get('/v1/developer/end-users?limit=100', developerKey);
    expect(demo.status).toBe(200);
    expect(demo.body.data.length).toBeGreaterThanOrEqual(1);
    expect(demo.body.data.every((row: Body) => row.app === 'app_demo_local')).toBe(true);
    const refs = new Set(Object.values(users).map((user) => user.userRef));
    expect(demo.body.data.some((row: Body) => refs.has(row.user_ref))).toBe(false);
  });

  it.each([
    'limit=0',
    'limit=101',
    'limit=abc',
    'cursor=garbage',
    'cursor=2026-02-30T00:00:00.000000Z_00000000-0000-0000-0000-000000000000',
    'cursor=2026-01-01T24:00:00.000000Z_00000000-0000-0000-0000-000000000000',
    `cursor=${'x'.repeat(65)}`,
    'app=',
  ])('refuses %s with 400 in the envelope', async (query) => {
    const refused = await get(`/v1/developer/end-users?${query}`);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_request', request_id: refused.requestId });
  });
});
