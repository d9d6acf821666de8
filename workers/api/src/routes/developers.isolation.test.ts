/**
 * Tenant isolation of the developer and key endpoints: every endpoint with no key, a
 * revoked key, a suspended developer's key and another developer's key, on the victim's resource
 * ids — 401/403/404 in the envelope, and nothing written.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { userRef } from '#shared/auth/user-ref.ts';
import { fund } from '../../../test/ledger-kit.ts';
import { adminToken, api, call, createTestEnv, developerKey, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
type Body = Record<string, any>;
const world = {} as { victimKeyId: string; victimId: string; revoked: string; suspended: string; other: string };

const onboard = async (email: string) => {
  const response = await call(api(), testEnv, '/v1/admin/developers', { json: { name: email, email }, token: adminToken });
  return (await response.json()) as Body;
};

beforeAll(async () => {
  testEnv = await createTestEnv();
  const victim = await onboard('victim@example.test');
  world.victimId = victim.developer.id;
  world.victimKeyId = victim.key.id;
  const revokedOwner = await onboard('revoked@example.test');
  const spare = await call(api(), testEnv, '/v1/developer/keys', { json: {}, token: revokedOwner.key.api_key });
  await call(api(), testEnv, `/v1/developer/keys/${revokedOwner.key.id}/revoke`, {
    method: 'POST',
    token: ((await spare.json()) as Body).api_key,
  });
  world.revoked = revokedOwner.key.api_key;
  const suspended = await onboard('suspended@example.test');
  await call(api(), testEnv, `/v1/admin/developers/${suspended.developer.id}/suspend`, { method: 'POST', token: adminToken });
  world.suspended = suspended.key.api_key;
  world.other = developerKey;
});

const snapshot = () =>
  sql(
    testEnv,
    `select (select count(*) from audit_logs) as audit, (select count(*) from developers) as developers,
            (select json_agg(json_build_object('id', id, 'revoked_at', revoked_at) order by id) from developer_keys) as keys,
            (select json_agg(json_build_object('id', id, 'suspended_at', suspended_at) order by id) from developers) as suspensions`,
  );

const developerEndpoints = () => [
  { method: 'GET', path: '/v1/developer/keys' },
  { method: 'POST', path: '/v1/developer/keys', json: { label: 'intruder' } },
  { method: 'POST', path: `/v1/developer/keys/${world.victimKeyId}/revoke` },
  { method: 'GET', path: '/v1/developer/audit-log' },
];
const adminEndpoints = () => [
  { method: 'GET', path: '/v1/admin/developers' },
  { method: 'POST', path: '/v1/admin/developers', json: { name: 'x', email: 'intruder@example.test' } },
  { method: 'POST', path: `/v1/admin/developers/${world.victimId}/suspend` },
  { method: 'POST', path: `/v1/admin/developers/${world.victimId}/unsuspend` },
  { method: 'GET', path: `/v1/admin/audit-log?developer_id=${world.victimId}` },
];

async function expectRefused(endpoint: { method: string; path: string; json?: unknown }, token: string | undefined, status: number) {
  const response = await call(api(), testEnv, endpoint.path, { method: endpoint.method, json: endpoint.json, token });
  const body = (await response.json()) as Body;
  expect([endpoint.path, response.status]).toEqual([endpoint.path, status]);
  expect(body.error.request_id).toBe(response.headers.get('x-request-id'));
  expect(JSON.stringify(body)).not.toMatch(/victim@|fdk_/);
}

describe('tenant isolation of developers and keys', () => {
  it('refuses every developer endpoint without a live key of an active developer (401/403), writing nothing', async () => {
    const before = await snapshot();
    for (const endpoint of developerEndpoints()) {
      await expectRefused(endpoint, undefined, 401);
      await expectRefused(endpoint, world.revoked, 401);
      await expectRefused(endpoint, `fdk_${'x'.repeat(43)}`, 401);
      await expectRefused(endpoint, world.suspended, 403);
    }
    expect(await snapshot()).toEqual(before);
  });

  it("answers another developer's key on the victim's key id with 404 and leaves it live", async () => {
    const before = await snapshot();
    await expectRefused({ method: 'POST', path: `/v1/developer/keys/${world.victimKeyId}/revoke` }, world.other, 404);
    await expectRefused({ method: 'POST', path: '/v1/developer/keys/not-a-uuid/revoke' }, world.other, 404);
    expect(await snapshot()).toEqual(before);
    const own = await call(api(), testEnv, '/v1/developer/keys', { token: world.other });
    expect(JSON.stringify(await own.json())).not.toContain(world.victimKeyId);
    const log = await call(api(), testEnv, '/v1/developer/audit-log?limit=100', { token: world.other });
    const text = JSON.stringify(await log.json());
    expect(text).not.toContain(world.victimId);
    expect(text).not.toContain(world.victimKeyId);
  });

  it('refuses every admin endpoint to every developer key and to none (401), writing nothing', async () => {
    const before = await snapshot();
    for (const endpoint of adminEndpoints()) {
      for (const token of [undefined, world.revoked, world.suspended, world.other]) await expectRefused(endpoint, token, 401);
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe('tenant isolation of the money views and exports', () => {
  const victim = {} as { appPublicId: string; walletId: string; endUserRef: string; payoutId: string; callId: string };

  beforeAll(async () => {
    victim.appPublicId = 'app_victim_money';
    const [row] = await sql<{ end_user_id: string; wallet_id: string }>(
      testEnv,
      `with a as (insert into apps (developer_id, public_app_id, name) values ($1, $2, 'Victim app') returning id),
            u as (insert into end_users (app_id, external_user_hash) select id, 'victim-user-hash' from a returning id, app_id),
            e as (insert into usage_events (request_id, app_id, end_user_id, feature_key, route_mode, provider, model,
                    input_tokens, output_tokens, upstream_cost_usd, retail_usd, developer_revenue_usd, platform_share_usd)
                  select 'victim-usage-1', app_id, id, 'chat', 'platform', 'mock', 'echo', 1, 1, 0, 0.5, 0.25, 0.25 from u)
       select u.id as end_user_id, (select id from wallets where developer_id = $1) as wallet_id from u`,
      [world.victimId, victim.appPublicId],
    );
    victim.walletId = row!.wallet_id;
    victim.endUserRef = await userRef(testEnv.SESSION_HASH_SECRET, row!.end_user_id);
    // A call in the victim's request log.
    victim.callId = crypto.randomUUID();
    await sql(
      testEnv,
      `insert into gateway_call_log (id, app_id, end_user_id, feature_key, surface, requested_model, outcome, client_request_id, created_at)
       select $1, app_id, id, 'chat', 'chat.completions', 'mock:echo', 'answered', 'victim-request-1', now() from end_users where id = $2`,
      [victim.callId, row!.end_user_id],
    );
    // A live session of the victim's end user, which no refused revoke may end.
    await sql(
      testEnv,
      `insert into virtual_sessions (token_hash, app_id, end_user_id, expires_at)
       select 'victim-session-hash', app_id, id, now() + interval '1 hour' from end_users where id = $1`,
      [row!.end_user_id],
    );
    await fund(testEnv, victim.walletId, '5.00000000');
    const run = await call(api(), testEnv, '/v1/admin/payouts/run-mock', { json: { threshold_usd: '1.00000000' }, token: adminToken });
    victim.payoutId = ((await run.json()) as Body).data.find((payout: Body) => payout.wallet_id === victim.walletId).id;
  });

  /** The stats' longest range, ending today (UTC): the day of the victim's call. */
  const lastDays = () => {
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    return `from=${day(-89)}&to=${day(0)}`;
  };
  const moneyEndpoints = () => [
    { method: 'GET', path: '/v1/developer/wallet' },
    { method: 'GET', path: '/v1/developer/end-users' },
    { method: 'GET', path: `/v1/developer/end-users?app=${victim.appPublicId}` },
    { method: 'GET', path: '/v1/developer/payouts' },
    { method: 'GET', path: `/v1/developer/payouts?cursor=${victim.payoutId}` },
    { method: 'GET', path: '/v1/developer/exports/usage.csv' },
    { method: 'GET', path: '/v1/developer/exports/revenue.csv' },
    { method: 'GET', path: '/v1/developer/exports/payouts.csv' },
    { method: 'GET', path: '/v1/developer/calls' },
    { method: 'GET', path: `/v1/developer/calls?app=${victim.appPublicId}` },
    { method: 'GET', path: `/v1/developer/calls?user_ref=${victim.endUserRef}` },
    { method: 'GET', path: '/v1/developer/calls?request_id=victim-request-1' },
    { method: 'GET', path: `/v1/developer/calls/${victim.callId}` },
    { method: 'GET', path: `/v1/developer/calls/stats?${lastDays()}` },
    { method: 'GET', path: `/v1/developer/calls/stats?app=${victim.appPublicId}&${lastDays()}` },
  ];
  const revokeEndUser = () => ({ method: 'POST', path: `/v1/developer/end-users/${victim.endUserRef}/revoke-sessions` });

  const moneySnapshot = async () => [
    await snapshot(),
    await sql(
      testEnv,
      `select (select count(*) from ledger_entries) as entries, (select count(*) from wallet_balance_deltas) as deltas,
              (select json_agg(json_build_object('id', id, 'status', status) order by id) from payouts) as payouts,
              (select count(*) from balance_holds) as holds,
              (select count(*) from virtual_sessions where revoked_at is null) as live_sessions`,
    ),
  ];

  it('refuses every money endpoint without a live key of an active developer (401/403), writing nothing', async () => {
    const before = await moneySnapshot();
    for (const endpoint of [...moneyEndpoints(), revokeEndUser()]) {
      await expectRefused(endpoint, undefined, 401);
      await expectRefused(endpoint, world.revoked, 401);
      await expectRefused(endpoint, `fdk_${'x'.repeat(43)}`, 401);
      await expectRefused(endpoint, world.suspended, 403);
    }
    expect(await moneySnapshot()).toEqual(before);
  });

  it("gives another developer's key none of the victim's money: 404 on the victim's app, nothing of theirs in any answer", async () => {
    const before = await moneySnapshot();
    await expectRefused({ method: 'GET', path: `/v1/developer/end-users?app=${victim.appPublicId}` }, world.other, 404);
    await expectRefused({ method: 'GET', path: `/v1/developer/calls?app=${victim.appPublicId}` }, world.other, 404);
    await expectRefused({ method: 'GET', path: `/v1/developer/calls/${victim.callId}` }, world.other, 404);
    await expectRefused({ method: 'GET', path: `/v1/developer/calls/stats?app=${victim.appPublicId}&${lastDays()}` }, world.other, 404);
    await expectRefused(revokeEndUser(), world.other, 404);
    const named = (endpoint: { path: string }) => endpoint.path.includes('?app=') || endpoint.path.includes(victim.callId);
    for (const endpoint of moneyEndpoints().filter((endpoint) => !named(endpoint))) {
      const response = await call(api(), testEnv, endpoint.path, { token: world.other });
      expect([endpoint.path, response.status]).toEqual([endpoint.path, 200]);
      const text = await response.text();
      for (const secret of [
        world.victimId,
        victim.walletId,
        victim.endUserRef,
        victim.payoutId,
        victim.appPublicId,
        'victim-usage-1',
        victim.callId,
        'victim-request-1',
      ]) {
        expect(text, endpoint.path).not.toContain(secret);
      }
    }
    // The victim's call is today: the other developer's days count none of it.
    const stats = await call(api(), testEnv, `/v1/developer/calls/stats?${lastDays()}`, { token: world.other });
    const days = ((await stats.json()) as Body).data as Body[];
    expect(days).toHaveLength(90);
    expect(days.reduce((sum, day) => sum + day.calls, 0)).toBe(0);
    const probe = await call(api(), testEnv, `/v1/developer/payouts?cursor=${victim.payoutId}`, { token: world.other });
    expect(await probe.json()).toEqual({ data: [], next_cursor: null });
    expect(await moneySnapshot()).toEqual(before);
  });
});

describe('tenant isolation of apps and features', () => {
  const victim = {} as { app: string; webhook: string };

  beforeAll(async () => {
    const owner = await onboard('app-victim@example.test');
    const key = owner.key.api_key as string;
    const created = await call(api(), testEnv, '/v1/developer/apps', { json: { name: 'Victim app' }, token: key });
    victim.app = ((await created.json()) as Body).public_app_id;
    for (const feature_key of ['chat', 'spare']) {
      await call(api(), testEnv, `/v1/developer/apps/${victim.app}/features`, {
        json: { feature_key, name: feature_key, default_model: 'mock:echo' },
        token: key,
      });
    }
    // Where the victim's calls are traced to, with a secret header.
    const traced = await call(api(), testEnv, `/v1/developer/apps/${victim.app}/traces`, {
      method: 'PUT',
      json: { endpoint: 'https://otlp.victim.example.com/v1/traces', headers: { authorization: 'Bearer victim-otlp-secret' } },
      token: key,
    });
    expect(traced.status).toBe(200);
    // Where the victim's signed events go.
    const hooked = await call(api(), testEnv, '/v1/developer/webhooks', {
      json: { url: 'https://hooks.victim.example.com/faucet', event_types: ['*'] },
      token: key,
    });
    expect(hooked.status).toBe(201);
    victim.webhook = ((await hooked.json()) as Body).id;
  });

  const feature = { feature_key: 'intruder', name: 'Intruder', default_model: 'mock:echo' };
  /** Every endpoint that names the victim's app (or one of its features). */
  const victimEndpoints = () => {
    const app = `/v1/developer/apps/${victim.app}`;
    return [
      { method: 'GET', path: app },
      { method: 'PATCH', path: app, json: { name: 'taken', default_feature_key: 'spare' } },
      { method: 'POST', path: `${app}/archive` },
      { method: 'GET', path: `${app}/features` },
      { method: 'POST', path: `${app}/features`, json: feature },
      { method: 'GET', path: `${app}/features/chat` },
      { method: 'PATCH', path: `${app}/features/chat`, json: { developer_price_per_mtok_usd: '99.00000000' } },
      { method: 'POST', path: `${app}/features/spare/archive` },
      { method: 'GET', path: `${app}/identity` },
      { method: 'PATCH', path: `${app}/session-policy`, json: { session_policy: 'anonymous' } },
      { method: 'PUT', path: `${app}/allowed-origins`, json: { allowed_origins: ['https://evil.example.com'] } },
      { method: 'POST', path: `${app}/signing-secrets`, json: {} },
      { method: 'GET', path: `${app}/traces` },
      { method: 'PUT', path: `${app}/traces`, json: { endpoint: 'https://otlp.intruder.example.com/v1/traces' } },
      { method: 'DELETE', path: `${app}/traces` },
      { method: 'GET', path: `${app}/alerts` },
      { method: 'PUT', path: `${app}/alerts`, json: { low_balance_threshold_usd: '1.00000000' } },
      ...webhookEndpoints(`/v1/developer/webhooks/${victim.webhook}`),
    ];
  };
  const webhookEndpoints = (hook: string) => [
    { method: 'GET', path: hook },
    { method: 'PATCH', path: hook, json: { url: 'https://hooks.intruder.example.com/steal' } },
    { method: 'DELETE', path: hook },
    { method: 'POST', path: `${hook}/rotate-secret`, json: {} },
    { method: 'GET', path: `${hook}/deliveries` },
    { method: 'GET', path: `${hook}/deliveries/${crypto.randomUUID()}` },
    { method: 'POST', path: `${hook}/deliveries/${crypto.randomUUID()}/resend` },
  ];
  const ownEndpoints = [
    { method: 'GET', path: '/v1/developer/apps' },
    { method: 'POST', path: '/v1/developer/apps', json: { name: 'Intruder app' } },
    { method: 'GET', path: '/v1/developer/webhooks' },
    { method: 'POST', path: '/v1/developer/webhooks', json: { url: 'https://hooks.intruder.example.com/a', event_types: ['*'] } },
  ];

  const appSnapshot = async () => [
    await snapshot(),
    await sql(
      testEnv,
      `select (select json_agg(a order by a.id) from apps a) as apps, (select json_agg(f order by f.id) from app_features f) as features,
              (select count(*) from app_signing_secrets) as secrets,
              (select json_agg(t order by t.app_id) from app_trace_exports t) as traces,
              (select json_agg(w order by w.id) from webhook_endpoints w) as webhooks`,
    ),
  ];

  it('refuses every app and feature endpoint without a live key of an active developer (401/403), writing nothing', async () => {
    const before = await appSnapshot();
    for (const endpoint of [...ownEndpoints, ...victimEndpoints()]) {
      await expectRefused(endpoint, undefined, 401);
      await expectRefused(endpoint, world.revoked, 401);
      await expectRefused(endpoint, `fdk_${'x'.repeat(43)}`, 401);
      await expectRefused(endpoint, world.suspended, 403);
    }
    expect(await appSnapshot()).toEqual(before);
  });

  it("answers another developer's key on the victim's app and features with 404, writing nothing, and lists none of them", async () => {
    const before = await appSnapshot();
    for (const endpoint of victimEndpoints()) await expectRefused(endpoint, world.other, 404);
    await expectRefused({ method: 'GET', path: `/v1/developer/apps/${victim.app}/features/missing` }, world.other, 404);
    expect(await appSnapshot()).toEqual(before);
    const own = await call(api(), testEnv, '/v1/developer/apps?limit=100', { token: world.other });
    expect(own.status).toBe(200);
    expect(JSON.stringify(await own.json())).not.toContain(victim.app);
    const probe = await call(api(), testEnv, `/v1/developer/apps?cursor=${victim.app}`, { token: world.other });
    expect(await probe.json()).toEqual({ data: [], next_cursor: null });
  });
});
