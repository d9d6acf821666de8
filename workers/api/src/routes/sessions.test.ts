import { beforeAll, describe, expect, it } from 'vitest';
import { api, call, createTestEnv, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

describe('POST /v1/sessions', () => {
  it('creates a session whose token is shown once and stored only as a hash', async () => {
    const response = await call(api(), testEnv, '/v1/sessions', {
      json: { public_app_id: demoPublicAppId, external_user_id: 'alice@example.com' },
      token: developerKey,
    });
    expect(response.status).toBe(201);
    const body = (await response.json()) as {
      session_token: string;
      expires_at: string;
      token_type: string;
      session_id: string;
      user_ref: string;
    };
    expect(body.session_token).toMatch(/^fvs_[A-Za-z0-9_-]{43,}$/);
    expect(body.session_id).toMatch(/^[0-9a-f-]{36}$/);
    // The user reference for usage reports is not a plain hash of the user id (guessable for emails).
    expect(body.user_ref).toMatch(/^[0-9a-f]{64}$/);
    const plainHash = Array.from(
      new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode('alice@example.com'))),
      (byte) => byte.toString(16).padStart(2, '0'),
    ).join('');
    expect(body.user_ref).not.toBe(plainHash);
    expect(body.token_type).toBe('Bearer');
    expect(Date.parse(body.expires_at) - Date.now()).toBeGreaterThan(800_000);

    const sessions = await sql(testEnv, 'select token_hash from virtual_sessions');
    expect(JSON.stringify(sessions)).not.toContain(body.session_token);
    const users = await sql<{ external_user_hash: string }>(testEnv, 'select external_user_hash from end_users');
    expect(JSON.stringify(users)).not.toContain('alice@example.com');
  });

  it('upserts the end user and one wallet across sessions', async () => {
    for (let index = 0; index < 2; index++) {
      await call(api(), testEnv, '/v1/sessions', {
        json: { public_app_id: demoPublicAppId, external_user_id: 'bob' },
        token: developerKey,
      });
    }
    const [row] = await sql<{ users: string; wallets: string }>(
      testEnv,
      `select count(distinct u.id) as users, count(distinct w.id) as wallets
         from end_users u join wallets w on w.end_user_id = u.id
        where u.external_user_hash = (select external_user_hash from end_users order by created_at desc limit 1)`,
    );
    expect(Number(row!.users)).toBe(1);
    expect(Number(row!.wallets)).toBe(1);
  });

  it('answers 404 for an unknown app', async () => {
    const response = await call(api(), testEnv, '/v1/sessions', {
      json: { public_app_id: 'app_missing', external_user_id: 'x' },
      token: developerKey,
    });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it.each([
    [{}],
    [{ public_app_id: demoPublicAppId }],
    [{ public_app_id: demoPublicAppId, external_user_id: '' }],
    [{ public_app_id: demoPublicAppId, external_user_id: 42 }],
    [{ public_app_id: demoPublicAppId, external_user_id: 'x'.repeat(300) }],
    [{ public_app_id: demoPublicAppId, external_user_id: 'bad\u0000id' }],
    [{ public_app_id: 'has spaces', external_user_id: 'x' }],
    [{ public_app_id: demoPublicAppId, external_user_id: 'x', device_id: 'too-short' }],
  ])('rejects %j with 400 invalid_request', async (json) => {
    const response = await call(api(), testEnv, '/v1/sessions', { json, token: developerKey });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; request_id: string } };
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.request_id).toBe(response.headers.get('x-request-id'));
  });
});
