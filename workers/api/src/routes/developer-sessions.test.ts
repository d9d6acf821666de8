import { beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  call,
  createSession,
  createTestEnv,
  demoPublicAppId,
  developerKey,
  gateway,
  sql,
  type TestEnv,
} from '../../../test/harness.ts';
import { createDeveloperApp } from '../../../test/identity-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

const chat = (token: string) =>
  call(gateway(), testEnv, '/v1/chat/completions', {
    json: { model: 'mock:echo', feature: 'chat', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    token,
  });
const wallet = (token: string) => call(api(), testEnv, '/v1/user/wallet', { token });

describe('revoking sessions', () => {
  it("revokes every session of one end user: the gateway and /v1/user/* refuse them at once, other users' sessions live on", async () => {
    const user = `revoked-${crypto.randomUUID()}`;
    const first = await createSession(testEnv, user);
    const second = await createSession(testEnv, user);
    const bystander = await createSession(testEnv);
    expect((await wallet(first.token)).status).toBe(200);

    const response = await call(api(), testEnv, `/v1/developer/apps/${demoPublicAppId}/users/revoke-sessions`, {
      json: { external_user_id: user },
      token: developerKey,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ revoked_sessions: 2 });

    for (const session of [first, second]) {
      expect((await wallet(session.token)).status).toBe(401);
      const refused = await chat(session.token);
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }
    expect((await wallet(bystander.token)).status).toBe(200);
    // Past authentication (an unfunded wallet: 402), not refused as a session.
    expect((await chat(bystander.token)).status).toBe(402);
    const audit = await sql(testEnv, `select actor_type, metadata from audit_logs where action = 'app.sessions_revoked'`);
    expect(audit).toHaveLength(1);
    expect(JSON.stringify(audit)).not.toContain(user);
  });

  it('revokes one session by the session_id POST /v1/sessions returned, idempotently', async () => {
    const user = `one-${crypto.randomUUID()}`;
    const revoked = await createSession(testEnv, user);
    const kept = await createSession(testEnv, user);
    const path = `/v1/developer/apps/${demoPublicAppId}/sessions/${revoked.sessionId}/revoke`;
    expect(await (await call(api(), testEnv, path, { method: 'POST', token: developerKey })).json()).toEqual({ revoked_sessions: 1 });
    expect(await (await call(api(), testEnv, path, { method: 'POST', token: developerKey })).json()).toEqual({ revoked_sessions: 0 });
    expect((await chat(revoked.token)).status).toBe(401);
    expect((await chat(kept.token)).status).toBe(402);
  });

  it("lets no other developer revoke, nor learn of, the app's sessions (404)", async () => {
    const other = await createDeveloperApp(testEnv, { policy: 'server' });
    const session = await createSession(testEnv);
    const byUser = await call(api(), testEnv, `/v1/developer/apps/${demoPublicAppId}/users/revoke-sessions`, {
      json: { external_user_id: 'demo-user' },
      token: other.developerKey,
    });
    expect(byUser.status).toBe(404);
    // Their own app's path with a session of another app: unknown too.
    const byId = await call(api(), testEnv, `/v1/developer/apps/${other.publicAppId}/sessions/${session.sessionId}/revoke`, {
      method: 'POST',
      token: other.developerKey,
    });
    expect(byId.status).toBe(404);
    expect((await wallet(session.token)).status).toBe(200);
  });

  it('never names a session by its token', async () => {
    const session = await createSession(testEnv);
    const response = await call(api(), testEnv, `/v1/developer/apps/${demoPublicAppId}/sessions/${session.token}/revoke`, {
      method: 'POST',
      token: developerKey,
    });
    expect(response.status).toBe(400);
    expect((await wallet(session.token)).status).toBe(200);
  });
});
