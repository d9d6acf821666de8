import { beforeAll, describe, expect, it } from 'vitest';
import { createSession, createTestEnv, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { auditRows, fakeAnthropicKey, fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

const create = (token: string, json: unknown, requestId?: string) =>
  send(testEnv, '/v1/user/provider-keys', { json, token, headers: requestId ? { 'x-request-id': requestId } : {} });

describe('POST /v1/user/provider-keys', () => {
  it('stores the key encrypted and answers with the masked key only — never the key, not even on create', async () => {
    const session = await createSession(testEnv);
    const apiKey = fakeOpenAiKey();
    const response = await create(session.token, { provider: 'openai', api_key: apiKey, label: 'mine' }, 'req-create-1');
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      provider: 'openai',
      label: 'mine',
      status: 'active',
      masked_key: `sk-proj-...${apiKey.slice(-4)}`,
      base_url: null,
      created_at: expect.any(String),
      disabled_at: null,
    });
    expect(response.text).not.toContain(apiKey);

    const [row] = await sql<{ ciphertext: string; iv: string; key_version: number; owner_type: string; end_user_id: string }>(
      testEnv,
      'select ciphertext, iv, key_version, owner_type, end_user_id from provider_credentials where id = $1',
      [response.body.id],
    );
    expect(row).toMatchObject({ key_version: 1, owner_type: 'end_user', end_user_id: session.endUserId });
    expect(atob(row!.iv)).toHaveLength(12);
    expect(JSON.stringify(row)).not.toContain(apiKey);
    expect(JSON.stringify(row)).not.toContain(btoa(apiKey).slice(0, 20));
  });

  it('uses a fresh IV for every key, so equal keys never give equal ciphertexts', async () => {
    const apiKey = fakeOpenAiKey();
    const ids = [];
    for (let index = 0; index < 2; index++) {
      const session = await createSession(testEnv);
      ids.push((await create(session.token, { provider: 'openai', api_key: apiKey })).body.id);
    }
    const rows = await sql<{ ciphertext: string; iv: string }>(
      testEnv,
      'select ciphertext, iv from provider_credentials where id = any($1)',
      [ids],
    );
    expect(rows).toHaveLength(2);
    expect(rows[0]!.iv).not.toBe(rows[1]!.iv);
    expect(rows[0]!.ciphertext).not.toBe(rows[1]!.ciphertext);
  });

  it('writes an audit row with actor, action, target, request id and time — nothing secret', async () => {
    const session = await createSession(testEnv);
    const apiKey = fakeOpenAiKey();
    const created = await create(session.token, { provider: 'openai', api_key: apiKey }, 'req-audit-create');
    const rows = await auditRows(testEnv, created.body.id);
    expect(rows).toEqual([
      {
        actor_type: 'user',
        actor_id: session.endUserId,
        action: 'provider_key.created',
        target_type: 'provider_credential',
        target_id: created.body.id,
        request_id: 'req-audit-create',
        metadata: { provider: 'openai', owner_type: 'end_user' },
        created_at: expect.any(Date),
      },
    ]);
    expect(JSON.stringify(rows)).not.toContain(apiKey.slice(-4));
  });

  it('refuses a second active key for the same provider with 409, and allows one for another provider', async () => {
    const session = await createSession(testEnv);
    expect((await create(session.token, { provider: 'openai', api_key: fakeOpenAiKey() })).status).toBe(201);
    const second = await create(session.token, { provider: 'openai', api_key: fakeOpenAiKey() });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('conflict');
    expect((await create(session.token, { provider: 'anthropic', api_key: fakeAnthropicKey() })).status).toBe(201);
    const [count] = await sql<{ n: number }>(testEnv, `select count(*)::integer as n from provider_credentials where end_user_id = $1`, [
      session.endUserId,
    ]);
    expect(count!.n).toBe(2);
  });

  it.each([
    ['an unknown provider', { provider: 'cohere', api_key: 'sk-fake_abcdefghijklmnopqrstuvwxyz' }],
    ['an anthropic key given as openai', { provider: 'openai', api_key: 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz' }],
    ['an openai key given as anthropic', { provider: 'anthropic', api_key: 'sk-proj-abcdefghijklmnopqrstuvwxyz' }],
    ['a truncated key', { provider: 'openai', api_key: 'sk-proj-abc' }],
    ['a key with whitespace', { provider: 'openai', api_key: ' sk-proj-abcdefghijklmnopqrstuvwxyz' }],
    ['a missing key', { provider: 'openai' }],
    ['a number as key', { provider: 'openai', api_key: 12345 }],
    ['a budget on a user key', { provider: 'openai', api_key: 'sk-proj-abcdefghijklmnopqrstuvwxyz', monthly_budget_usd: '1.00000000' }],
    ['a control character in the label', { provider: 'openai', api_key: 'sk-proj-abcdefghijklmnopqrstuvwxyz', label: 'a\u0000b' }],
  ])('refuses %s with 400 and does not echo the key', async (_, json) => {
    const session = await createSession(testEnv);
    const response = await create(session.token, json);
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
    if (typeof (json as { api_key?: unknown }).api_key === 'string')
      expect(response.text).not.toContain((json as { api_key: string }).api_key.trim());
    const [count] = await sql<{ n: number }>(testEnv, 'select count(*)::integer as n from provider_credentials where end_user_id = $1', [
      session.endUserId,
    ]);
    expect(count!.n).toBe(0);
  });

  it('needs a session', async () => {
    expect((await send(testEnv, '/v1/user/provider-keys', { json: { provider: 'openai', api_key: fakeOpenAiKey() } })).status).toBe(401);
    expect((await send(testEnv, '/v1/user/provider-keys', { token: 'fvs_not_a_real_session_token_at_all_0123456789' })).status).toBe(401);
  });
});

describe('GET /v1/user/provider-keys', () => {
  it("lists the user's own keys, newest first, active and disabled, masked", async () => {
    const session = await createSession(testEnv);
    const other = await createSession(testEnv);
    const first = await create(session.token, { provider: 'openai', api_key: fakeOpenAiKey() });
    await send(testEnv, `/v1/user/provider-keys/${first.body.id}`, { method: 'DELETE', token: session.token });
    const second = await create(session.token, { provider: 'openai', api_key: fakeOpenAiKey(), label: 'new' });
    await create(other.token, { provider: 'openai', api_key: fakeOpenAiKey() });

    const listed = await send(testEnv, '/v1/user/provider-keys', { token: session.token });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((key: { id: string; status: string }) => [key.id, key.status])).toEqual([
      [second.body.id, 'active'],
      [first.body.id, 'disabled'],
    ]);
    expect(listed.body.data[0]).toEqual(second.body);
  });
});

describe('DELETE /v1/user/provider-keys/{id}', () => {
  it('disables the key, keeps the row, is idempotent and audits the change once', async () => {
    const session = await createSession(testEnv);
    const created = await create(session.token, { provider: 'openai', api_key: fakeOpenAiKey() });
    const first = await send(testEnv, `/v1/user/provider-keys/${created.body.id}`, {
      method: 'DELETE',
      token: session.token,
      headers: { 'x-request-id': 'req-disable-1' },
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id: created.body.id, status: 'disabled', disabled_at: expect.any(String) });
    const again = await send(testEnv, `/v1/user/provider-keys/${created.body.id}`, { method: 'DELETE', token: session.token });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);

    const [row] = await sql<{ status: string }>(testEnv, 'select status from provider_credentials where id = $1', [created.body.id]);
    expect(row!.status).toBe('disabled');
    const audit = await auditRows(testEnv, created.body.id);
    expect(audit.map((entry) => [entry.action, entry.request_id, entry.actor_type, entry.actor_id])).toEqual([
      ['provider_key.created', expect.any(String), 'user', session.endUserId],
      ['provider_key.disabled', 'req-disable-1', 'user', session.endUserId],
    ]);
  });

  it("answers 404 for another user's key and changes nothing — neither the key nor the audit log", async () => {
    const owner = await createSession(testEnv);
    const intruder = await createSession(testEnv);
    const created = await create(owner.token, { provider: 'openai', api_key: fakeOpenAiKey() });
    const before = await sql(testEnv, 'select * from provider_credentials where id = $1', [created.body.id]);
    const auditBefore = await auditRows(testEnv, created.body.id);

    const response = await send(testEnv, `/v1/user/provider-keys/${created.body.id}`, { method: 'DELETE', token: intruder.token });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
    expect(await sql(testEnv, 'select * from provider_credentials where id = $1', [created.body.id])).toEqual(before);
    expect(await auditRows(testEnv, created.body.id)).toEqual(auditBefore);
    const listed = await send(testEnv, '/v1/user/provider-keys', { token: intruder.token });
    expect(listed.body.data).toEqual([]);
  });

  it("answers 404 for a developer key's id on the user route", async () => {
    const session = await createSession(testEnv);
    const created = await send(testEnv, '/v1/developer/provider-keys', {
      json: { provider: 'anthropic', api_key: fakeAnthropicKey(), monthly_budget_usd: '5.00000000' },
      token: developerKey,
    });
    expect(created.status).toBe(201);
    const response = await send(testEnv, `/v1/user/provider-keys/${created.body.id}`, { method: 'DELETE', token: session.token });
    expect(response.status).toBe(404);
    const [after] = await sql<{ status: string }>(testEnv, 'select status from provider_credentials where id = $1', [created.body.id]);
    expect(after!.status).toBe('active');
  });

  it.each(['not-a-uuid', '00000000-0000-4000-8000-000000000000', "1' or '1'='1"])('answers 404 for id %j', async (id) => {
    const session = await createSession(testEnv);
    const response = await send(testEnv, `/v1/user/provider-keys/${encodeURIComponent(id)}`, { method: 'DELETE', token: session.token });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
  });
});

describe('OpenAPI', () => {
  it('describes the provider-keys endpoints, with no field that would return a raw key', async () => {
    const response = await send(testEnv, '/openapi.json');
    expect(response.status).toBe(200);
    const paths = response.body.paths as Record<string, Record<string, unknown>>;
    expect(Object.keys(paths['/v1/user/provider-keys']!).sort()).toEqual(['get', 'post']);
    expect(Object.keys(paths['/v1/user/provider-keys/{id}']!)).toEqual(['delete']);
    expect(Object.keys(paths['/v1/developer/provider-keys']!).sort()).toEqual(['get', 'post']);
    expect(Object.keys(paths['/v1/admin/provider-keys/re-encrypt']!)).toEqual(['post']);
    const keySchema = response.body.components.schemas.ProviderKey as { properties: Record<string, unknown> };
    expect(Object.keys(keySchema.properties)).not.toContain('api_key');
  });
});
