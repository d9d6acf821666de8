/**
 * faucet_lease_context: the per-call authorization's checks and route choice, read-only.
 * Each refusal is the one faucet_authorize_call gives for the same call; `leasable` only for the
 * platform route (whatever the app's per-end-user limits); nothing is ever written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, sql, type TestEnv } from '../../test/harness.ts';
import { openLedgerDatabase, type LedgerTestDatabase } from '../../test/ledger-kit.ts';
import { formatUsd, parseWireAmount } from '../money/index.ts';
import { leaseContext, type LeaseContextInput } from './lease-context.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 4);
});
afterAll(async () => {
  await database.close();
});

interface World {
  developerId: string;
  appId: string;
  endUserId: string;
  walletId: string;
  tokenHash: string;
}

/** A developer of its own, an app with a default feature `chat`, an end user with a wallet, a live session. */
async function world(): Promise<World> {
  const unique = crypto.randomUUID().replace(/-/g, '');
  const [row] = await sql<Omit<World, 'tokenHash'>>(
    testEnv,
    `with d as (insert into developers (name, email) values ('Lease dev', $1) returning id),
          a as (insert into apps (developer_id, public_app_id, name, default_feature_key)
                select id, $2, 'Lease app', 'chat' from d returning id, developer_id),
          f as (insert into app_features (app_id, feature_key, name, default_model, open_fee_usd, developer_price_per_mtok_usd)
                select id, 'chat', 'Chat', 'openai:gpt-4o-mini', 0.00100000, 2.50000000 from a returning app_id),
          u as (insert into end_users (app_id, external_user_hash) select id, $3 from a returning id, app_id),
          w as (insert into wallets (kind, end_user_id) select 'user', id from u returning id, end_user_id)
     select a.developer_id as "developerId", a.id as "appId", w.end_user_id as "endUserId", w.id as "walletId"
       from a, w, f`,
    [`lease-${unique}@example.com`, `app_lease_${unique}`, unique],
  );
  const tokenHash = unique + unique;
  await sql(
    testEnv,
    `insert into virtual_sessions (token_hash, app_id, end_user_id, expires_at) values ($1, $2, $3, now() + interval '1 hour')`,
    [tokenHash, row!.appId, row!.endUserId],
  );
  return { ...row!, tokenHash };
}

const input = (target: World, overrides: Partial<LeaseContextInput> = {}): LeaseContextInput => ({
  tokenHash: target.tokenHash,
  featureKey: undefined,
  provider: 'openai',
  model: 'gpt-4o-mini',
  requestedRoute: undefined,
  platformHold: parseWireAmount('0.01000000'),
  poolAvailable: true,
  routing: null,
  ...overrides,
});

/** Every table a call's authorization writes to. */
async function writtenRows() {
  const [row] = await sql<Record<string, number>>(
    testEnv,
    `select (select count(*) from gateway_calls)::int as calls, (select count(*) from balance_holds)::int as holds,
            (select count(*) from provider_credential_reservations)::int as reservations,
            (select count(*) from usage_events)::int as usage`,
  );
  return row!;
}

async function addKey(owner: { endUserId: string } | { developerId: string }, provider = 'openai'): Promise<void> {
  const isUser = 'endUserId' in owner;
  await sql(
    testEnv,
    `insert into provider_credentials (owner_type, end_user_id, developer_id, provider, ciphertext, iv, key_version, masked_key, monthly_budget_usd)
     values ($1, $2, $3, $4, 'x', 'x', 1, 'sk-...abcd', $5)`,
    [
      isUser ? 'end_user' : 'developer',
      isUser ? owner.endUserId : null,
      isUser ? null : owner.developerId,
      provider,
      isUser ? null : '100.00000000',
    ],
  );
}

/** What faucet_authorize_call answers for the same call (a refusal of steps 1–2 writes nothing). */
async function authorizeOutcome(
  target: World,
  overrides: { featureKey?: string; model?: string; alias?: string; fallbacks?: string[] } = {},
) {
  const callId = crypto.randomUUID();
  const [row] = await sql<{ outcome: string }>(
    testEnv,
    `select outcome from faucet_authorize_call($1, $2, $3::uuid, $4, $5, 'f', null, 'openai', $6, 100, 100, 0.01, 0.001, true, 60, 60,
                                                null, null, $7, $8::jsonb)`,
    [
      target.tokenHash,
      overrides.featureKey ?? null,
      callId,
      `call:${callId}`,
      `client-${callId}`,
      overrides.model ?? 'gpt-4o-mini',
      overrides.alias ?? null,
      overrides.fallbacks === undefined ? null : JSON.stringify(overrides.fallbacks),
    ],
  );
  return row!.outcome;
}

describe('leaseContext', () => {
  it('is leasable on the platform route of an app without limits, with what the per-call path would record', async () => {
    const target = await world();
    const before = await writtenRows();
    const context = await leaseContext(database.db, input(target, { routing: { alias: null, fallbacks: [] } }));
    expect(context).toMatchObject({
      outcome: 'leasable',
      appId: target.appId,
      endUserId: target.endUserId,
      walletId: target.walletId,
      developerShareBps: 5000,
      featureKey: 'chat',
      maxOutputTokens: null,
      modelAliases: {},
      fallbackModels: [],
    });
    if (context.outcome !== 'leasable') throw new Error('not leasable');
    expect(formatUsd(context.openFeeUsd!)).toBe('0.00100000');
    expect(formatUsd(context.developerPricePerMtokUsd!)).toBe('2.50000000');
    expect(context.sessionExpiresAt.getTime()).toBeGreaterThan(Date.now() + 50 * 60_000);
    // Without routing the feature's aliases and fallbacks are not answered (as faucet_authorize_call).
    expect(await leaseContext(database.db, input(target))).toMatchObject({ outcome: 'leasable', modelAliases: null, fallbackModels: null });
    // Asking for the platform route explicitly is leasable too.
    expect((await leaseContext(database.db, input(target, { requestedRoute: 'platform' }))).outcome).toBe('leasable');
    expect(await writtenRows()).toEqual(before);
  });

  it('is database for every call the per-call path must decide, leasable with its route otherwise, writing nothing', async () => {
    const before = await writtenRows();
    const outcome = async (target: World, overrides: Partial<LeaseContextInput> = {}) => {
      const context = await leaseContext(database.db, input(target, overrides));
      return context.outcome === 'leasable' ? `leasable ${context.routeMode}` : context.outcome;
    };

    // The end user's byok key, on a byok_first feature or asked for: the byok route, on the lease,
    // with the key the per-call path takes (their newest active key of the provider).
    const byok = await world();
    await addKey({ endUserId: byok.endUserId });
    expect(await outcome(byok)).toBe('leasable platform'); // platform_first: the byok key is not taken first
    expect(await outcome(byok, { requestedRoute: 'byok' })).toBe('leasable byok');
    await sql(testEnv, `update app_features set route_policy = 'byok_first' where app_id = $1`, [byok.appId]);
    expect(await outcome(byok)).toBe('leasable byok');
    const [newest] = await sql<{ id: string }>(
      testEnv,
      `select id from provider_credentials where end_user_id = $1 and status = 'active' order by created_at desc limit 1`,
      [byok.endUserId],
    );
    const context = await leaseContext(database.db, input(byok));
    expect(context.outcome === 'leasable' && context.routeKey?.id).toBe(newest!.id);
    expect(await outcome(byok, { provider: 'anthropic', model: 'claude-3-5-haiku' })).toBe('leasable platform'); // no key of that provider
    // With the feature's fallbacks: their key of each other fallback provider, as the per-call path answers them.
    await addKey({ endUserId: byok.endUserId }, 'anthropic');
    const fallbacks = ['anthropic:claude-3-5-haiku'];
    await sql(testEnv, `update app_features set fallback_models = $2::jsonb where app_id = $1`, [byok.appId, JSON.stringify(fallbacks)]);
    const withFallbacks = await leaseContext(database.db, input(byok, { routing: { alias: null, fallbacks } }));
    const [anthropicKey] = await sql<{ id: string }>(
      testEnv,
      `select id from provider_credentials where end_user_id = $1 and provider = 'anthropic'`,
      [byok.endUserId],
    );
    expect(withFallbacks.outcome === 'leasable' && withFallbacks.fallbackKeys).toEqual({
      anthropic: { id: anthropicKey!.id, ciphertext: 'x', iv: 'x', key_version: 1 },
    });
    await sql(testEnv, `update app_features set fallback_models = '[]' where app_id = $1`, [byok.appId]);
    expect(await outcome(byok, { requestedRoute: 'platform' })).toBe('leasable platform');

    // The developer's key of the provider: the developer_key route with that key when the call's
    // upstream cost is known (its budget is leased by the object); unpriced, the per-call path decides.
    const developer = await world();
    await addKey({ developerId: developer.developerId });
    const catalogCost = parseWireAmount('0.00100000');
    expect(await outcome(developer)).toBe('database');
    expect(await outcome(developer, { catalogCost })).toBe('leasable developer_key');
    expect(await outcome(developer, { catalogCost, requestedRoute: 'developer_key' })).toBe('leasable developer_key');
    expect(await outcome(developer, { requestedRoute: 'developer_key' })).toBe('database');
    const [developerKeyRow] = await sql<{ id: string }>(
      testEnv,
      `select id from provider_credentials where developer_id = $1 and status = 'active'`,
      [developer.developerId],
    );
    const keyed = await leaseContext(database.db, input(developer, { catalogCost, routing: { alias: null, fallbacks: [] } }));
    expect(keyed.outcome === 'leasable' && keyed.routeKey).toEqual({
      id: developerKeyRow!.id,
      ciphertext: 'x',
      iv: 'x',
      keyVersion: 1,
      baseUrl: null,
    });
    // No byok fallback keys on this route.
    expect(keyed.outcome === 'leasable' && keyed.fallbackKeys).toBeNull();
    expect(await outcome(developer, { catalogCost, requestedRoute: 'platform' })).toBe('leasable platform');
    expect(await outcome(developer, { catalogCost, provider: 'anthropic', model: 'claude-3-5-haiku' })).toBe('leasable platform');
    // An end user's byok key on a byok_first feature comes first, as in the per-call path.
    await addKey({ endUserId: developer.endUserId });
    await sql(testEnv, `update app_features set route_policy = 'byok_first' where app_id = $1`, [developer.appId]);
    expect(await outcome(developer, { catalogCost })).toBe('leasable byok');
    expect(await outcome(developer, { catalogCost, requestedRoute: 'developer_key' })).toBe('leasable developer_key');

    // byok or developer_key asked for without a key: the per-call path answers it (it refuses it).
    const plain = await world();
    expect(await outcome(plain, { requestedRoute: 'byok' })).toBe('database');
    expect(await outcome(plain, { requestedRoute: 'developer_key', catalogCost })).toBe('database');
    // Unpriced, no pool.
    expect(await outcome(plain, { platformHold: null })).toBe('database');
    expect(await outcome(plain, { poolAvailable: false })).toBe('database');

    // The app's per-end-user limits leave the call leasable: they cap the lease (faucet_settle_lease).
    for (const limit of ['limit_requests_per_minute = 10', 'limit_spend_per_day_usd = 5', 'limit_spend_per_month_usd = 50']) {
      const limited = await world();
      await sql(testEnv, `update apps set ${limit} where id = $1`, [limited.appId]);
      expect(await outcome(limited)).toBe('leasable platform');
    }
    expect(await writtenRows()).toMatchObject({ calls: before.calls, holds: before.holds, reservations: 0, usage: before.usage });
  });

  it('gives each refusal of faucet_authorize_call steps 1–2, with the same string, writing nothing', async () => {
    const cases: Array<{ name: string; setup: (target: World) => Promise<unknown>; call?: Parameters<typeof authorizeOutcome>[1] }> = [
      {
        name: 'unauthorized',
        setup: (target) => sql(testEnv, `update virtual_sessions set revoked_at = now() where token_hash = $1`, [target.tokenHash]),
      },
      {
        name: 'unauthorized',
        setup: (target) =>
          sql(testEnv, `update virtual_sessions set expires_at = now() - interval '1 second' where token_hash = $1`, [target.tokenHash]),
      },
      {
        name: 'developer_suspended',
        setup: (target) => sql(testEnv, `update developers set suspended_at = now() where id = $1`, [target.developerId]),
      },
      { name: 'app_archived', setup: (target) => sql(testEnv, `update apps set archived_at = now() where id = $1`, [target.appId]) },
      {
        name: 'no_default_feature',
        setup: (target) => sql(testEnv, `update apps set default_feature_key = null where id = $1`, [target.appId]),
      },
      { name: 'unknown_feature', setup: async () => undefined, call: { featureKey: 'nope' } },
      {
        name: 'feature_archived',
        setup: (target) => sql(testEnv, `update app_features set archived_at = now() where app_id = $1`, [target.appId]),
      },
      {
        name: 'model_not_allowed',
        setup: (target) => sql(testEnv, `update app_features set allowed_models = '["openai:gpt-4o"]' where app_id = $1`, [target.appId]),
      },
      {
        name: 'routing_changed',
        setup: (target) => sql(testEnv, `update app_features set fallback_models = '["openai:gpt-4o"]' where app_id = $1`, [target.appId]),
        call: { fallbacks: [] },
      },
      {
        name: 'routing_changed',
        setup: (target) =>
          sql(testEnv, `update app_features set model_aliases = '{"fast": "openai:gpt-4o"}' where app_id = $1`, [target.appId]),
        call: { alias: 'fast', fallbacks: [] },
      },
    ];
    const before = await writtenRows();
    for (const { name, setup, call } of cases) {
      const target = await world();
      await setup(target);
      const context = await leaseContext(
        database.db,
        input(target, {
          featureKey: call?.featureKey,
          routing: call?.fallbacks === undefined ? null : { alias: call.alias ?? null, fallbacks: call.fallbacks },
        }),
      );
      expect({ name, outcome: context.outcome }).toEqual({ name, outcome: name });
      expect(await authorizeOutcome(target, call)).toBe(name);
      if (name === 'unauthorized' || name === 'developer_suspended') {
        expect(context).toEqual({ outcome: name });
      } else {
        expect(context).toMatchObject({ appId: target.appId, endUserId: target.endUserId });
      }
      if (name === 'routing_changed')
        expect(context).toMatchObject({ fallbackModels: expect.any(Array), modelAliases: expect.any(Object) });
    }
    // An unknown token (nothing to set up).
    const stranger = await world();
    expect((await leaseContext(database.db, { ...input(stranger), tokenHash: 'f'.repeat(64) })).outcome).toBe('unauthorized');
    expect(await writtenRows()).toEqual(before);
  });
});
