/**
 * faucet_lease_context: the checks every call passes and the facts a wallet object decides it with
 * (route policy, prices, the end user's and the developer's keys), read-only: it chooses nothing and
 * writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, sql, type TestEnv } from '../../test/harness.ts';
import { openLedgerDatabase, type LedgerTestDatabase } from '../../test/ledger-kit.ts';
import { formatUsd } from '../money/index.ts';
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

describe('leaseContext', () => {
  it('is leasable for a live session, with the feature’s prices, policy and routing, and no key when none is stored', async () => {
    const target = await world();
    const before = await writtenRows();
    const context = await leaseContext(database.db, input(target, { routing: { alias: null, fallbacks: [] } }));
    expect(context).toMatchObject({
      outcome: 'leasable',
      appId: target.appId,
      endUserId: target.endUserId,
      developerShareBps: 5000,
      routePolicy: 'platform_first',
      userKey: null,
      developerKey: null,
      featureKey: 'chat',
      maxOutputTokens: null,
      modelAliases: {},
      fallbackModels: [],
    });
    if (context.outcome !== 'leasable') throw new Error('not leasable');
    expect(formatUsd(context.openFeeUsd!)).toBe('0.00100000');
    expect(formatUsd(context.developerPricePerMtokUsd!)).toBe('2.50000000');
    expect(context.sessionExpiresAt.getTime()).toBeGreaterThan(Date.now() + 50 * 60_000);
    // Without routing the feature's aliases and fallbacks are not answered.
    expect(await leaseContext(database.db, input(target))).toMatchObject({ outcome: 'leasable', modelAliases: null, fallbackModels: null });
    expect(await writtenRows()).toEqual(before);
  });

  it('answers the end user’s and the developer’s newest active key of the provider, and the byok fallback keys, choosing nothing', async () => {
    const before = await writtenRows();
    const keyIds = (context: Awaited<ReturnType<typeof leaseContext>>) =>
      context.outcome === 'leasable' ? { user: context.userKey?.id ?? null, developer: context.developerKey?.id ?? null } : context.outcome;
    const newest = async (column: 'end_user_id' | 'developer_id', owner: string, provider = 'openai') =>
      (
        await sql<{ id: string }>(
          testEnv,
          `select id from provider_credentials where ${column} = $1 and provider = $2 and status = 'active' order by created_at desc limit 1`,
          [owner, provider],
        )
      )[0]!.id;

    const target = await world();
    await addKey({ endUserId: target.endUserId });
    await addKey({ developerId: target.developerId });
    const userKey = await newest('end_user_id', target.endUserId);
    const developerKey = await newest('developer_id', target.developerId);
    expect(keyIds(await leaseContext(database.db, input(target)))).toEqual({ user: userKey, developer: developerKey });
    const context = await leaseContext(database.db, input(target));
    expect(context.outcome === 'leasable' && context.developerKey).toEqual({
      id: developerKey,
      ciphertext: 'x',
      iv: 'x',
      keyVersion: 1,
      baseUrl: null,
    });
    // The policy is answered as the feature has it; the route is decideCall's.
    await sql(testEnv, `update app_features set route_policy = 'byok_first' where app_id = $1`, [target.appId]);
    expect(await leaseContext(database.db, input(target))).toMatchObject({ outcome: 'leasable', routePolicy: 'byok_first' });
    // Another provider: no key of it.
    expect(keyIds(await leaseContext(database.db, input(target, { provider: 'anthropic', model: 'claude-3-5-haiku' })))).toEqual({
      user: null,
      developer: null,
    });
    // A disabled key is not answered; the one that replaces it is.
    await sql(testEnv, `update provider_credentials set status = 'disabled', disabled_at = now() where id = $1`, [userKey]);
    expect(keyIds(await leaseContext(database.db, input(target)))).toEqual({ user: null, developer: developerKey });
    await addKey({ endUserId: target.endUserId });
    const replacement = await newest('end_user_id', target.endUserId);
    expect(replacement).not.toBe(userKey);
    expect(keyIds(await leaseContext(database.db, input(target)))).toEqual({ user: replacement, developer: developerKey });
    // Another developer's key is never answered.
    const other = await world();
    await addKey({ developerId: other.developerId });
    expect(keyIds(await leaseContext(database.db, input(target)))).toMatchObject({ developer: developerKey });

    // With the feature's fallbacks: the end user's key of each other fallback provider.
    await addKey({ endUserId: target.endUserId }, 'anthropic');
    const fallbacks = ['anthropic:claude-3-5-haiku'];
    await sql(testEnv, `update app_features set fallback_models = $2::jsonb where app_id = $1`, [target.appId, JSON.stringify(fallbacks)]);
    const withFallbacks = await leaseContext(database.db, input(target, { routing: { alias: null, fallbacks } }));
    expect(withFallbacks.outcome === 'leasable' && withFallbacks.fallbackKeys).toEqual({
      anthropic: { id: await newest('end_user_id', target.endUserId, 'anthropic'), ciphertext: 'x', iv: 'x', key_version: 1 },
    });

    // The app's per-end-user limits leave the call leasable: they cap the lease (faucet_settle_lease).
    for (const limit of ['limit_requests_per_minute = 10', 'limit_spend_per_day_usd = 5', 'limit_spend_per_month_usd = 50']) {
      const limited = await world();
      await sql(testEnv, `update apps set ${limit} where id = $1`, [limited.appId]);
      expect((await leaseContext(database.db, input(limited))).outcome).toBe('leasable');
    }
    expect(await writtenRows()).toMatchObject({ calls: before.calls, holds: before.holds, reservations: 0, usage: before.usage });
  });

  it('gives each refusal of the checks (faucet_call_context), writing nothing', async () => {
    const cases: Array<{
      name: string;
      setup: (target: World) => Promise<unknown>;
      call?: { featureKey?: string; alias?: string; fallbacks?: string[] };
    }> = [
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
