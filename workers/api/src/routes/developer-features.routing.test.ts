/**
 * A feature's model aliases and fallback models through the features API (docs/models.md, "Fallback
 * and aliases"): created, read, listed, changed and audited like the other settings; alias names of
 * the closed pattern only, every target a priced catalog model within allowed_models; refusals are
 * 400 in the envelope and write nothing; another developer's feature is 404.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, call, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

type Body = Record<string, any>;

async function send(token: string, path: string, init: { json?: unknown; method?: string } = {}) {
  const response = await call(api(), testEnv, path, { ...init, token });
  return { status: response.status, body: (await response.json()) as Body, requestId: response.headers.get('x-request-id') };
}

async function newApp() {
  const email = `routing-${crypto.randomUUID()}@example.test`;
  const onboarded = await call(api(), testEnv, '/v1/admin/developers', { json: { name: 'Routing', email }, token: adminToken });
  const key = ((await onboarded.json()) as Body).key.api_key as string;
  const app = (await send(key, '/v1/developer/apps', { json: { name: 'App' } })).body.public_app_id as string;
  return { key, app, base: `/v1/developer/apps/${app}/features` };
}

const writes = () =>
  sql(
    testEnv,
    `select (select count(*) from audit_logs) as audit,
            (select json_agg(json_build_object('a', f.model_aliases, 'f', f.fallback_models) order by f.id) from app_features f) as features`,
  );

const routed = {
  feature_key: 'chat',
  name: 'Chat',
  default_model: 'openai:gpt-4o-mini',
  model_aliases: { smart: 'openai:gpt-4o', fast: 'openai:gpt-4o-mini' },
  fallback_models: ['openai:gpt-4o', 'mock:echo'],
};

describe('model aliases and fallback models of a feature', () => {
  it('are created, read, listed and audited', async () => {
    const { key, app, base } = await newApp();
    const created = await send(key, base, { json: routed });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ model_aliases: routed.model_aliases, fallback_models: routed.fallback_models });
    expect((await send(key, `${base}/chat`)).body).toMatchObject({ fallback_models: ['openai:gpt-4o', 'mock:echo'] });
    expect((await send(key, base)).body.data[0]).toMatchObject({ model_aliases: routed.model_aliases });
    const [audit] = await sql<{ metadata: Body }>(
      testEnv,
      `select metadata from audit_logs where target_type = 'app_feature' and target_id = $1 and action = 'feature.created'`,
      [`${app}/chat`],
    );
    expect(audit?.metadata.after).toMatchObject({ model_aliases: routed.model_aliases, fallback_models: routed.fallback_models });
  });

  it('are changed by PATCH (others kept), audited before/after, and cleared with {} and []', async () => {
    const { key, app, base } = await newApp();
    await send(key, base, { json: routed });
    const changed = await send(key, `${base}/chat`, { method: 'PATCH', json: { fallback_models: ['mock:echo'] } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ fallback_models: ['mock:echo'], model_aliases: routed.model_aliases });
    const audits = await sql<{ metadata: Body }>(
      testEnv,
      `select metadata from audit_logs where target_id = $1 and action = 'feature.updated' order by id`,
      [`${app}/chat`],
    );
    expect(audits.at(-1)?.metadata).toMatchObject({
      before: { fallback_models: ['openai:gpt-4o', 'mock:echo'] },
      after: { fallback_models: ['mock:echo'] },
    });
    const cleared = await send(key, `${base}/chat`, { method: 'PATCH', json: { fallback_models: [], model_aliases: {} } });
    expect(cleared.body).toMatchObject({ fallback_models: [], model_aliases: {} });
  });

  it.each([
    ['an alias with a colon', { model_aliases: { 'a:b': 'openai:gpt-4o' } }],
    ['an alias with a digit', { model_aliases: { fast2: 'openai:gpt-4o' } }],
    ['an alias with a hyphen (a bare model name shape)', { model_aliases: { 'gpt-x': 'openai:gpt-4o' } }],
    ['an alias that is a model id of the catalog', { model_aliases: { echo: 'openai:gpt-4o' } }],
    ['an upper-case alias', { model_aliases: { Fast: 'openai:gpt-4o' } }],
    ['an alias to an unknown model', { model_aliases: { fast: 'openai:no-such-model' } }],
    ['an alias to a bare name', { model_aliases: { fast: 'gpt-4o' } }],
    ['an alias to another alias', { model_aliases: { fast: 'smart', smart: 'openai:gpt-4o' } }],
    ['11 aliases', { model_aliases: Object.fromEntries('abcdefghijk'.split('').map((c) => [`a${c}`, 'openai:gpt-4o'])) }],
    ['4 fallbacks', { fallback_models: ['openai:gpt-4o', 'mock:echo', 'openai:gpt-4o-mini', 'openai:gpt-4.1'] }],
    ['a fallback listed twice', { fallback_models: ['openai:gpt-4o', 'openai:gpt-4o'] }],
    ['an unknown fallback', { fallback_models: ['acme:model'] }],
    ['fallbacks as a string', { fallback_models: 'openai:gpt-4o' }],
    ['a fallback outside allowed_models', { allowed_models: ['openai:gpt-4o-mini'], fallback_models: ['openai:gpt-4o'] }],
    ['an alias outside allowed_models', { allowed_models: ['openai:gpt-4o-mini'], model_aliases: { smart: 'openai:gpt-4o' } }],
  ])('refuses %s with 400 in the envelope, on create and on update, writing nothing', async (_, settings) => {
    const { key, base } = await newApp();
    await send(key, base, { json: { feature_key: 'chat', name: 'Chat', default_model: 'openai:gpt-4o-mini' } });
    const before = await writes();
    const refused = await send(key, base, {
      json: { feature_key: 'other', name: 'Other', default_model: 'openai:gpt-4o-mini', ...settings },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_request', request_id: refused.requestId });
    const patched = await send(key, `${base}/chat`, { method: 'PATCH', json: settings });
    expect(patched.status).toBe(400);
    expect(patched.body.error).toMatchObject({ code: 'invalid_request', request_id: patched.requestId });
    expect(await writes()).toEqual(before);
  });

  it('keeps targets within allowed_models on the merged row: narrowing allowed_models under a fallback is refused', async () => {
    const { key, base } = await newApp();
    await send(key, base, { json: routed });
    const before = await writes();
    const refused = await send(key, `${base}/chat`, { method: 'PATCH', json: { allowed_models: ['openai:gpt-4o-mini'] } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('allowed_models');
    expect(await writes()).toEqual(before);
    const allowed = await send(key, `${base}/chat`, {
      method: 'PATCH',
      json: { allowed_models: ['openai:gpt-4o-mini', 'openai:gpt-4o', 'mock:echo'] },
    });
    expect(allowed.status).toBe(200);
  });

  it("another developer's feature is 404 and unchanged", async () => {
    const owner = await newApp();
    const other = await newApp();
    await send(owner.key, owner.base, { json: routed });
    const before = await writes();
    const refused = await send(other.key, `${owner.base}/chat`, { method: 'PATCH', json: { fallback_models: [] } });
    expect(refused.status).toBe(404);
    expect(await writes()).toEqual(before);
  });
});
