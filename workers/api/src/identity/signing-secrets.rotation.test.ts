/**
 * Rotating PROVIDER_KEY_ENCRYPTION_KEY also re-encrypts the HS256 signing secrets of `signed` apps
 * (they are sealed under it like provider keys), so the old key can be removed and user tokens
 * signed with a secret issued before the rotation still verify.
 */
import { SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { encodeBase64 } from '#shared/provider-keys/keyring.ts';
import { adminToken, api, call, createTestEnv, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';

let v1Env: TestEnv;
const newEntry = `v2:${encodeBase64(crypto.getRandomValues(new Uint8Array(32)))}`;

beforeAll(async () => {
  v1Env = await createTestEnv();
});

const userToken = (secret: string, subject: string) =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(subject)
    .setAudience(demoPublicAppId)
    .setIssuedAt()
    .setNotBefore('0s')
    .setExpirationTime('2m')
    .sign(new TextEncoder().encode(secret));

const mint = async (testEnv: TestEnv, secret: string, subject: string) =>
  (await call(api(), testEnv, '/v1/sessions', { json: { public_app_id: demoPublicAppId, user_token: await userToken(secret, subject) } }))
    .status;

describe('rotating the encryption key of signing secrets', () => {
  it('re-encrypts the live secrets under the new version; afterwards tokens verify without the old key', async () => {
    const base = `/v1/developer/apps/${demoPublicAppId}`;
    const created = await call(api(), v1Env, `${base}/signing-secrets`, { method: 'POST', json: {}, token: developerKey });
    expect(created.status).toBe(201);
    const secret = ((await created.json()) as { signing_secret: string }).signing_secret;
    const policy = await call(api(), v1Env, `${base}/session-policy`, {
      method: 'PATCH',
      json: { session_policy: 'signed' },
      token: developerKey,
    });
    expect(policy.status).toBe(200);
    expect(await mint(v1Env, secret, 'before-rotation')).toBe(201);

    const v2Only = { ...v1Env, PROVIDER_KEY_ENCRYPTION_KEY: newEntry };
    // Without re-encryption the new key alone cannot open the secret: the token is refused.
    expect(await mint(v2Only, secret, 'too-early')).not.toBe(201);

    const rotating = { ...v1Env, PROVIDER_KEY_ENCRYPTION_KEY: `${newEntry},${v1Env.PROVIDER_KEY_ENCRYPTION_KEY}` };
    const result = await call(api(), rotating, '/v1/admin/provider-keys/re-encrypt', { method: 'POST', token: adminToken });
    expect(result.status).toBe(200);
    expect(((await result.json()) as { signing_secrets: unknown }).signing_secrets).toEqual({
      re_encrypted: 1,
      unreadable: 0,
      remaining: 0,
    });
    const [row] = await sql<{ key_version: number }>(v1Env, 'select key_version from app_signing_secrets');
    expect(row?.key_version).toBe(2);

    expect(await mint(v2Only, secret, 'after-rotation')).toBe(201);
    const again = await call(api(), rotating, '/v1/admin/provider-keys/re-encrypt', { method: 'POST', token: adminToken });
    expect(((await again.json()) as { signing_secrets: unknown }).signing_secrets).toEqual({
      re_encrypted: 0,
      unreadable: 0,
      remaining: 0,
    });
  });
});
