/**
 * `/v1/developer/apps/{public_app_id}/features` (docs/developers.md, "Apps and features"): create,
 * list, read, update and archive; models checked against the catalog, prices by the money module;
 * the default feature rule, also under a race; an archived feature refused by the gateway.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { chat, fundedSession, gatewayWith, userMessage } from '../../../test/gateway-kit.ts';
import { adminToken, api, call, createTestEnv, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

type Body = Record<string, any>;

async function send(token: string, path: string, init: { json?: unknown; method?: string } = {}) {
  const response = await call(api(), testEnv, path, { ...init, token });
  return { status: response.status, body: (await response.json()) as Body, requestId: response.headers.get('x-request-id') };
}

/** A new developer with one app; `features(path)` is under that app. */
async function newApp() {
  const email = `features-${crypto.randomUUID()}@example.test`;
  const onboarded = await call(api(), testEnv, '/v1/admin/developers', { json: { name: 'Features', email }, token: adminToken });
  const developer = (await onboarded.json()) as Body;
  const key = developer.key.api_key as string;
  const app = (await send(key, '/v1/developer/apps', { json: { name: 'App' } })).body.public_app_id as string;
  return { key, developerId: developer.developer.id as string, app, base: `/v1/developer/apps/${app}/features` };
}

const chatFeature = { feature_key: 'chat', name: 'Chat', default_model: 'mock:echo' };

const featureAudit = (target: string) =>
  sql<{ action: string; actor_id: string; request_id: string; metadata: Body }>(
    testEnv,
    `select action, actor_id, request_id, metadata from audit_logs where target_type = 'app_feature' and target_id = $1 order by id`,
    [target],
  );

const writes = () =>
  sql(
    testEnv,
    `select (select count(*) from audit_logs) as audit,
            (select json_agg(f order by f.id) from app_features f) as features,
            (select json_agg(json_build_object('id', a.id, 'default', a.default_feature_key) order by a.id) from apps a) as defaults`,
  );

describe('features of an app', () => {
  it('creates features with defaults; the first becomes the app default; audited with before/after', async () => {
    const { key, developerId, app, base } = await newApp();
    const created = await send(key, base, { json: chatFeature });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      feature_key: 'chat',
      name: 'Chat',
      default_model: 'mock:echo',
      allowed_models: [],
      route_policy: 'platform_first',
      developer_price_per_mtok_usd: null,
      open_fee_usd: '0.00000000',
      max_output_tokens: null,
      model_aliases: {},
      fallback_models: [],
      is_default: true,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      archived_at: null,
    });
    expect((await send(key, `/v1/developer/apps/${app}`)).body.default_feature_key).toBe('chat');
    const second = await send(key, base, {
      json: {
        feature_key: 'summaries.v2',
        name: 'Summaries',
        default_model: 'openai:gpt-4o-mini',
        allowed_models: ['openai:gpt-4o-mini', 'mock:echo', 'openai:gpt-4o-mini'],
        route_policy: 'byok_first',
        developer_price_per_mtok_usd: '2.50000000',
        open_fee_usd: '0.00100000',
        max_output_tokens: 512,
      },
    });
    expect(second.status).toBe(201);
    expect(second.body).toMatchObject({
      allowed_models: ['openai:gpt-4o-mini', 'mock:echo'],
      route_policy: 'byok_first',
      developer_price_per_mtok_usd: '2.50000000',
      open_fee_usd: '0.00100000',
      max_output_tokens: 512,
      is_default: false,
    });
    expect(await featureAudit(`${app}/chat`)).toEqual([
      {
        action: 'feature.created',
        actor_id: developerId,
        request_id: created.requestId,
        metadata: {
          before: null,
          made_default: true,
          after: {
            name: 'Chat',
            default_model: 'mock:echo',
            allowed_models: [],
            route_policy: 'platform_first',
            developer_price_per_mtok_usd: null,
            open_fee_usd: '0.00000000',
            max_output_tokens: null,
            model_aliases: {},
            fallback_models: [],
            archived_at: null,
          },
        },
      },
    ]);
    expect((await featureAudit(`${app}/summaries.v2`))[0]?.metadata.made_default).toBe(false);
  });

  it.each([
    ['a feature key with a space', { ...chatFeature, feature_key: 'my feature' }],
    ['a feature key with a colon', { ...chatFeature, feature_key: 'a:b' }],
    ['a feature key starting with a dot', { ...chatFeature, feature_key: '.hidden' }],
    ['a 65-character feature key', { ...chatFeature, feature_key: 'k'.repeat(65) }],
    ['no default model', { feature_key: 'x', name: 'X' }],
    ['a model without a provider', { ...chatFeature, default_model: 'gpt-4o-mini' }],
    ['an unknown provider', { ...chatFeature, default_model: 'acme:gpt-4o-mini' }],
    ['a model the catalog does not price', { ...chatFeature, default_model: 'openai:no-such-model' }],
    ['an unknown allowed model', { ...chatFeature, allowed_models: ['mock:echo', 'openai:nope'] }],
    ['a default model outside the allowed models', { ...chatFeature, allowed_models: ['openai:gpt-4o-mini'] }],
    ['an unknown route policy', { ...chatFeature, route_policy: 'cheapest' }],
    ['a price as a float', { ...chatFeature, developer_price_per_mtok_usd: 2.5 }],
    ['a price with 2 decimals', { ...chatFeature, developer_price_per_mtok_usd: '2.50' }],
    ['a negative price', { ...chatFeature, developer_price_per_mtok_usd: '-2.50000000' }],
    ['a price above the bound', { ...chatFeature, developer_price_per_mtok_usd: '10000.00000001' }],
    ['a fee above the bound', { ...chatFeature, open_fee_usd: '100.00000001' }],
    ['a null fee', { ...chatFeature, open_fee_usd: null }],
    ['a zero output cap', { ...chatFeature, max_output_tokens: 0 }],
    ['a fractional output cap', { ...chatFeature, max_output_tokens: 10.5 }],
    ['an unknown field', { ...chatFeature, markup_bps: 100 }],
    ['a smuggled app id', { ...chatFeature, app_id: '00000000-0000-0000-0000-000000000000' }],
    ['a smuggled archived_at', { ...chatFeature, archived_at: null }],
  ])('refuses %s with 400 in the envelope and writes nothing', async (_, json) => {
    const { key, base } = await newApp();
    const before = await writes();
    const refused = await send(key, base, { json });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_request', request_id: refused.requestId });
    expect(await writes()).toEqual(before);
  });

  it('refuses a feature key already used, archived or not (409), writing nothing', async () => {
    const { key, base } = await newApp();
    await send(key, base, { json: chatFeature });
    await send(key, base, { json: { ...chatFeature, feature_key: 'old' } });
    await send(key, `${base}/old/archive`, { method: 'POST' });
    const before = await writes();
    for (const featureKey of ['chat', 'old']) {
      const refused = await send(key, base, { json: { ...chatFeature, feature_key: featureKey } });
      expect([featureKey, refused.status, refused.body.error.code]).toEqual([featureKey, 409, 'conflict']);
    }
    expect(await writes()).toEqual(before);
  });

  it('lists features newest first, a page at a time; an unknown feature or app is 404', async () => {
    const { key, app, base } = await newApp();
    for (const featureKey of ['a', 'b', 'c']) await send(key, base, { json: { ...chatFeature, feature_key: featureKey } });
    const first = await send(key, `${base}?limit=2`);
    expect(first.body.data.map((feature: Body) => [feature.feature_key, feature.is_default])).toEqual([
      ['c', false],
      ['b', false],
    ]);
    expect(first.body.next_cursor).toBe('b');
    const second = await send(key, `${base}?limit=2&cursor=b`);
    expect(second.body).toMatchObject({ data: [{ feature_key: 'a', is_default: true }], next_cursor: null });
    expect((await send(key, `${base}/a`)).body.feature_key).toBe('a');
    for (const path of [`${base}/missing`, `/v1/developer/apps/app_missing/features`, `/v1/developer/apps/app_missing/features/a`]) {
      const missing = await send(key, path);
      expect([path, missing.status, missing.body.error.code]).toEqual([path, 404, 'not_found']);
    }
    expect((await send(key, `/v1/developer/apps/${app}/features/bad%20key`)).status).toBe(400);
    expect((await send(key, `${base}?cursor=a:b`)).status).toBe(400);
  });

  it('updates settings: fields left out keep their value; the model rule holds on the merged row; audited; a no-op writes nothing', async () => {
    const { key, app, base } = await newApp();
    await send(key, base, { json: { ...chatFeature, developer_price_per_mtok_usd: '1.00000000' } });
    const path = `${base}/chat`;
    const updated = await send(key, path, {
      method: 'PATCH',
      json: { developer_price_per_mtok_usd: '3.00000000', max_output_tokens: 256, allowed_models: ['mock:echo'] },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      name: 'Chat',
      default_model: 'mock:echo',
      allowed_models: ['mock:echo'],
      developer_price_per_mtok_usd: '3.00000000',
      max_output_tokens: 256,
      is_default: true,
    });
    expect(updated.body.updated_at > updated.body.created_at).toBe(true);
    expect((await featureAudit(`${app}/chat`)).at(-1)).toMatchObject({
      action: 'feature.updated',
      request_id: updated.requestId,
      metadata: {
        before: { developer_price_per_mtok_usd: '1.00000000', max_output_tokens: null, allowed_models: [] },
        after: { developer_price_per_mtok_usd: '3.00000000', max_output_tokens: 256, allowed_models: ['mock:echo'] },
      },
    });

    const before = await writes();
    expect((await send(key, path, { method: 'PATCH', json: { developer_price_per_mtok_usd: '3.00000000' } })).status).toBe(200);
    for (const json of [
      {},
      { default_model: 'openai:gpt-4o-mini' },
      { allowed_models: ['openai:gpt-4o-mini'] },
      { default_model: 'openai:unknown' },
      { open_fee_usd: '1' },
      { feature_key: 'renamed' },
    ]) {
      const refused = await send(key, path, { method: 'PATCH', json });
      expect([JSON.stringify(json), refused.status, refused.body.error.code]).toEqual([JSON.stringify(json), 400, 'invalid_request']);
    }
    expect(await writes()).toEqual(before);

    const both = await send(key, path, {
      method: 'PATCH',
      json: { default_model: 'openai:gpt-4o-mini', allowed_models: ['openai:gpt-4o-mini'], developer_price_per_mtok_usd: null },
    });
    expect(both.status).toBe(200);
    expect(both.body).toMatchObject({ default_model: 'openai:gpt-4o-mini', developer_price_per_mtok_usd: null });
  });

  it("refuses to archive the app's default feature until another default is set; archiving is idempotent and freezes the feature", async () => {
    const { key, app, base } = await newApp();
    await send(key, base, { json: chatFeature });
    await send(key, base, { json: { ...chatFeature, feature_key: 'next' } });
    const before = await writes();
    const refused = await send(key, `${base}/chat/archive`, { method: 'POST' });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('invalid_state');
    expect(await writes()).toEqual(before);

    await send(key, `/v1/developer/apps/${app}`, { method: 'PATCH', json: { default_feature_key: 'next' } });
    const archived = await send(key, `${base}/chat/archive`, { method: 'POST' });
    expect(archived.status).toBe(200);
    expect(archived.body).toMatchObject({ archived_at: expect.any(String), is_default: false });
    const again = await send(key, `${base}/chat/archive`, { method: 'POST' });
    expect(again.body.archived_at).toBe(archived.body.archived_at);
    expect((await featureAudit(`${app}/chat`)).filter((row) => row.action === 'feature.archived')).toHaveLength(1);
    const frozen = await send(key, `${base}/chat`, { method: 'PATCH', json: { name: 'Back' } });
    expect([frozen.status, frozen.body.error.code]).toEqual([409, 'invalid_state']);
    // The last live feature is the default: it stays until the app is archived.
    expect((await send(key, `${base}/next/archive`, { method: 'POST' })).status).toBe(409);
  });

  it('never leaves the default naming an archived feature when archive and a default change race', async () => {
    const { key, app, base } = await newApp();
    await send(key, base, { json: chatFeature });
    for (let round = 0; round < 8; round++) {
      const contested = `contested-${round}`;
      await send(key, base, { json: { ...chatFeature, feature_key: contested } });
      const [patch, archive] = await Promise.all([
        send(key, `/v1/developer/apps/${app}`, { method: 'PATCH', json: { default_feature_key: contested } }),
        send(key, `${base}/${contested}/archive`, { method: 'POST' }),
      ]);
      // Exactly one wins: the default moved (and the archive was refused), or the feature was archived first.
      expect([patch.status, archive.status].sort()).toEqual(patch.status === 200 ? [200, 409] : [200, 400]);
      const [state] = await sql<{ default_archived: boolean }>(
        testEnv,
        `select f.archived_at is not null as default_archived
           from apps a join app_features f on f.app_id = a.id and f.feature_key = a.default_feature_key where a.public_app_id = $1`,
        [app],
      );
      expect(state).toEqual({ default_archived: false });
      if (patch.status === 200) await send(key, `/v1/developer/apps/${app}`, { method: 'PATCH', json: { default_feature_key: 'chat' } });
    }
  });
});

describe('an archived feature at the gateway', () => {
  it('a call naming a feature archived through the API is refused with 403, nothing held', async () => {
    const base = `/v1/developer/apps/${demoPublicAppId}/features`;
    expect((await send(developerKey, base, { json: { ...chatFeature, feature_key: 'retiring' } })).status).toBe(201);
    const session = await fundedSession(testEnv);
    const body = { model: 'mock:echo', feature: 'retiring', messages: [userMessage('hi')] };
    expect((await chat(gatewayWith(), testEnv, session.token, body)).status).toBe(200);
    expect((await send(developerKey, `${base}/retiring/archive`, { method: 'POST' })).status).toBe(200);
    const calls = await sql(testEnv, 'select count(*) from gateway_calls');
    const refused = await chat(gatewayWith(), testEnv, session.token, body);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as Body).error.code).toBe('forbidden');
    expect(await sql(testEnv, 'select count(*) from gateway_calls')).toEqual(calls);
  });
});
