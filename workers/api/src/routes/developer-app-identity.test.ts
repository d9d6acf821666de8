import { beforeAll, describe, expect, it } from 'vitest';
import { api, call, createTestEnv, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { createDeveloperApp } from '../../../test/identity-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

const base = `/v1/developer/apps/${demoPublicAppId}`;

describe('session policy and allowed origins of an app', () => {
  it('starts as server with no origins, and shows no secret values', async () => {
    const response = await call(api(), testEnv, `${base}/identity`, { token: developerKey });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      public_app_id: demoPublicAppId,
      session_policy: 'server',
      jwks_url: null,
      allowed_origins: expect.any(Array),
      signing_secrets: [],
    });
  });

  it('changes the policy for its developer only, with an audit row', async () => {
    const other = await createDeveloperApp(testEnv, { policy: 'server' });
    const refused = await call(api(), testEnv, `${base}/session-policy`, {
      method: 'PATCH',
      json: { session_policy: 'anonymous' },
      token: other.developerKey,
    });
    expect(refused.status).toBe(404);
    const unauthenticated = await call(api(), testEnv, `${base}/session-policy`, {
      method: 'PATCH',
      json: { session_policy: 'anonymous' },
    });
    expect(unauthenticated.status).toBe(401);
    expect(await sql(testEnv, `select 1 from apps where public_app_id = $1 and session_policy <> 'server'`, [demoPublicAppId])).toEqual([]);

    const app = await createDeveloperApp(testEnv, { policy: 'server' });
    const changed = await call(api(), testEnv, `/v1/developer/apps/${app.publicAppId}/session-policy`, {
      method: 'PATCH',
      json: { session_policy: 'anonymous' },
      token: app.developerKey,
    });
    expect(changed.status).toBe(200);
    expect(((await changed.json()) as { session_policy: string }).session_policy).toBe('anonymous');
    const audit = await sql<{ actor_id: string; metadata: unknown }>(
      testEnv,
      `select actor_id, metadata from audit_logs where action = 'app.session_policy_changed' and target_id = $1`,
      [app.appId],
    );
    expect(audit).toEqual([{ actor_id: app.developerId, metadata: { from: 'server', to: 'anonymous', verifier: null } }]);
  });

  it('refuses signed without anything to verify with (409), then accepts it once a secret exists', async () => {
    const app = await createDeveloperApp(testEnv, { policy: 'server' });
    const path = `/v1/developer/apps/${app.publicAppId}`;
    const early = await call(api(), testEnv, `${path}/session-policy`, {
      method: 'PATCH',
      json: { session_policy: 'signed' },
      token: app.developerKey,
    });
    expect(early.status).toBe(409);
    expect((await call(api(), testEnv, `${path}/signing-secrets`, { method: 'POST', token: app.developerKey })).status).toBe(201);
    const later = await call(api(), testEnv, `${path}/session-policy`, {
      method: 'PATCH',
      json: { session_policy: 'signed' },
      token: app.developerKey,
    });
    expect(later.status).toBe(200);
  });

  it.each([
    'http://auth.example.com/jwks.json',
    'https://127.0.0.1/jwks.json',
    'https://169.254.169.254/',
    'https://metadata.internal/jwks',
    'not a url',
  ])('refuses the JWKS URL %s', async (jwksUrl) => {
    const app = await createDeveloperApp(testEnv, { policy: 'server' });
    const response = await call(api(), testEnv, `/v1/developer/apps/${app.publicAppId}/session-policy`, {
      method: 'PATCH',
      json: { session_policy: 'signed', jwks_url: jwksUrl },
      token: app.developerKey,
    });
    expect(response.status).toBe(400);
    expect(await sql(testEnv, 'select jwks_url from apps where id = $1', [app.appId])).toEqual([{ jwks_url: null }]);
  });

  it('sets allowed origins, canonical ones only, audited', async () => {
    const app = await createDeveloperApp(testEnv, { policy: 'server' });
    const path = `/v1/developer/apps/${app.publicAppId}/allowed-origins`;
    for (const bad of [
      'https://app.example/',
      'https://app.example/path',
      'javascript:alert(1)',
      '*',
      'https://user:pw@app.example',
      'HTTPS://APP.EXAMPLE',
    ]) {
      const response = await call(api(), testEnv, path, { method: 'PUT', json: { allowed_origins: [bad] }, token: app.developerKey });
      expect(response.status, bad).toBe(400);
    }
    const response = await call(api(), testEnv, path, {
      method: 'PUT',
      json: { allowed_origins: ['https://app.example', 'http://localhost:5173', 'https://app.example'] },
      token: app.developerKey,
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { allowed_origins: string[] }).allowed_origins).toEqual([
      'https://app.example',
      'http://localhost:5173',
    ]);
    expect(
      await sql(testEnv, `select 1 from audit_logs where action = 'app.allowed_origins_changed' and target_id = $1`, [app.appId]),
    ).toHaveLength(1);
  });
});
