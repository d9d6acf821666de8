/**
 * Rotating PROVIDER_KEY_ENCRYPTION_KEY (docs/provider-keys.md): during the rotation both versions
 * decrypt, the admin endpoint re-encrypts every row under the new version, and afterwards the old
 * key can be removed while every stored key still reaches the upstream unchanged.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayTestEnv, gatewayWith } from '../../../test/gateway-kit.ts';
import { adminToken, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { encodeBase64 } from '#shared/provider-keys/keyring.ts';
import { auditRows, fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';

let v1Env: TestEnv;
const oldEntry = () => v1Env.PROVIDER_KEY_ENCRYPTION_KEY as string;
const newEntry = `v2:${encodeBase64(crypto.getRandomValues(new Uint8Array(32)))}`;
const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('ok')));
const gateway = gatewayWith({ upstreamFetch: upstream.fetch });
const hi = { model: 'openai:gpt-4o-mini', feature: 'chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 7 };

beforeAll(async () => {
  v1Env = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-key-for-tests-000000' });
  expect(oldEntry()).toMatch(/^v1:/);
});

async function keyUsedFor(testEnv: TestEnv, token: string, routeMode: 'byok' | 'developer_key') {
  const sent = upstream.requests.length;
  const response = await chat(gateway, testEnv, token, { ...hi, route_mode: routeMode });
  return { status: response.status, authorization: upstream.requests.slice(sent)[0]?.headers.authorization };
}

const versions = () =>
  sql<{ id: string; key_version: number; ciphertext: string; iv: string }>(
    v1Env,
    'select id, key_version, ciphertext, iv from provider_credentials order by id',
  );

describe('rotating the provider key encryption key', () => {
  // The wallet objects are told to forget their cached contexts by the re-encryption (the next test).
  it('keeps old rows readable during the rotation, re-encrypts them all, then works without the old key', async () => {
    const session = await fundedSession(v1Env, '1.00000000');
    const userKey = fakeOpenAiKey();
    const developerApiKey = fakeOpenAiKey();
    expect(
      (await send(v1Env, '/v1/user/provider-keys', { json: { provider: 'openai', api_key: userKey }, token: session.token })).status,
    ).toBe(201);
    expect(
      (
        await send(v1Env, '/v1/developer/provider-keys', {
          json: { provider: 'openai', api_key: developerApiKey, monthly_budget_usd: '5.00000000' },
          token: developerKey,
        })
      ).status,
    ).toBe(201);
    const before = await versions();
    expect(before.map((row) => row.key_version)).toEqual([1, 1]);

    // Step 1: the new key first, the old one still listed. Old rows decrypt; new rows use v2.
    const rotating = { ...v1Env, PROVIDER_KEY_ENCRYPTION_KEY: `${newEntry},${oldEntry()}` };
    expect(await keyUsedFor(rotating, session.token, 'byok')).toEqual({ status: 200, authorization: `Bearer ${userKey}` });
    expect(await keyUsedFor(rotating, session.token, 'developer_key')).toEqual({ status: 200, authorization: `Bearer ${developerApiKey}` });
    const other = await fundedSession(v1Env, '0.00000000');
    const lateKey = fakeOpenAiKey();
    const late = await send(rotating, '/v1/user/provider-keys', { json: { provider: 'openai', api_key: lateKey }, token: other.token });
    const [lateRow] = await sql<{ key_version: number }>(v1Env, 'select key_version from provider_credentials where id = $1', [
      late.body.id,
    ]);
    expect(lateRow!.key_version).toBe(2);

    // Step 2: re-encrypt everything under v2 (audited per key), then again: nothing left to do.
    const result = await send(rotating, '/v1/admin/provider-keys/re-encrypt', {
      method: 'POST',
      token: adminToken,
      headers: { 'x-request-id': 'req-rotate-1' },
    });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      current_key_version: 2,
      re_encrypted: 2,
      unreadable: 0,
      remaining: 0,
      signing_secrets: { re_encrypted: 0, unreadable: 0, remaining: 0 },
      webhook_secrets: { re_encrypted: 0, unreadable: 0, remaining: 0 },
      trace_headers: { re_encrypted: 0, unreadable: 0, remaining: 0 },
      // The one end user whose calls took a lease: their wallet object forgets the former ciphertexts.
      wallet_objects_told: 1,
    });
    const after = await versions();
    expect(after.map((row) => row.key_version)).toEqual([2, 2, 2]);
    for (const old of before) {
      const now = after.find((row) => row.id === old.id)!;
      expect(now.ciphertext).not.toBe(old.ciphertext);
      expect(now.iv).not.toBe(old.iv);
    }
    const audit = (await auditRows(v1Env)).filter((row) => row.action === 'provider_key.re_encrypted');
    expect(audit.map((row) => [row.actor_type, row.actor_id, row.request_id]).sort()).toEqual([
      ['admin', null, 'req-rotate-1'],
      ['admin', null, 'req-rotate-1'],
    ]);
    expect(audit.map((row) => row.target_id).sort()).toEqual(before.map((row) => row.id).sort());
    const again = await send(rotating, '/v1/admin/provider-keys/re-encrypt', { method: 'POST', token: adminToken });
    expect(again.body).toMatchObject({ re_encrypted: 0, remaining: 0 });

    // Step 3: the old key removed; every stored key still goes upstream exactly as it was given.
    const rotated = { ...v1Env, PROVIDER_KEY_ENCRYPTION_KEY: newEntry };
    expect(await keyUsedFor(rotated, session.token, 'byok')).toEqual({ status: 200, authorization: `Bearer ${userKey}` });
    expect(await keyUsedFor(rotated, session.token, 'developer_key')).toEqual({ status: 200, authorization: `Bearer ${developerApiKey}` });
    expect(await keyUsedFor(rotated, other.token, 'byok')).toEqual({ status: 200, authorization: `Bearer ${lateKey}` });
  });

  it('on the lease path, an object that cached a key before the re-encryption opens it once the old version is gone', async () => {
    // The first test left every row under v2 (`newEntry`): rotate again, from v2 to v3.
    const current = { ...v1Env, PROVIDER_KEY_ENCRYPTION_KEY: newEntry };
    const next = `v3:${encodeBase64(crypto.getRandomValues(new Uint8Array(32)))}`;
    const session = await fundedSession(current, '1.00000000');
    const userKey = fakeOpenAiKey();
    expect(
      (await send(current, '/v1/user/provider-keys', { json: { provider: 'openai', api_key: userKey }, token: session.token })).status,
    ).toBe(201);
    // The wallet object reads the session's context (and the key's v2 ciphertext) and keeps it.
    expect(await keyUsedFor(current, session.token, 'byok')).toEqual({ status: 200, authorization: `Bearer ${userKey}` });

    const rotating = { ...current, PROVIDER_KEY_ENCRYPTION_KEY: `${next},${newEntry}` };
    const result = await send(rotating, '/v1/admin/provider-keys/re-encrypt', { method: 'POST', token: adminToken });
    expect(result.body).toMatchObject({ current_key_version: 3, remaining: 0 });
    expect((result.body as { wallet_objects_told: number }).wallet_objects_told).toBeGreaterThanOrEqual(1);

    // v2 removed at once: the object read its context again, under v3.
    const rotated = { ...current, PROVIDER_KEY_ENCRYPTION_KEY: next };
    expect(await keyUsedFor(rotated, session.token, 'byok')).toEqual({ status: 200, authorization: `Bearer ${userKey}` });
  });

  it('counts rows it cannot read (their version is not configured) and leaves them untouched', async () => {
    const before = await versions();
    const wrong = { ...v1Env, PROVIDER_KEY_ENCRYPTION_KEY: `v4:${encodeBase64(crypto.getRandomValues(new Uint8Array(32)))}` };
    const result = await send(wrong, '/v1/admin/provider-keys/re-encrypt', { method: 'POST', token: adminToken });
    expect(result.body).toEqual({
      current_key_version: 4,
      re_encrypted: 0,
      unreadable: before.length,
      remaining: before.length,
      signing_secrets: { re_encrypted: 0, unreadable: 0, remaining: 0 },
      webhook_secrets: { re_encrypted: 0, unreadable: 0, remaining: 0 },
      trace_headers: { re_encrypted: 0, unreadable: 0, remaining: 0 },
      wallet_objects_told: 0,
    });
    expect(await versions()).toEqual(before);
  });

  it('is for the admin only', async () => {
    expect((await send(v1Env, '/v1/admin/provider-keys/re-encrypt', { method: 'POST', token: developerKey })).status).toBe(401);
    expect((await send(v1Env, '/v1/admin/provider-keys/re-encrypt', { method: 'POST' })).status).toBe(401);
  });
});
