import { beforeAll, describe, expect, it } from 'vitest';
import { userRef } from '#shared/auth/user-ref.ts';
import { hashExternalUserId } from '#shared/crypto.ts';
import { findEndUserByRef } from '#shared/developers/find-end-user-by-ref.ts';
import {
  adminToken,
  api,
  call,
  createDatabase,
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

describe("revoking an end user's sessions by the user_ref the end-user list shows", () => {
  /** `token: null` sends no Authorization header. */
  const byRef = (ref: string, token: string | null = developerKey) =>
    call(api(), testEnv, `/v1/developer/end-users/${ref}/revoke-sessions`, { method: 'POST', token: token ?? undefined });
  const liveSessions = async () =>
    Number((await sql<{ live: string }>(testEnv, 'select count(*) as live from virtual_sessions where revoked_at is null'))[0]!.live);

  it('revokes every live session of the listed user, audited like the revoke by id; other users live on', async () => {
    const user = `by-ref-${crypto.randomUUID()}`;
    const first = await createSession(testEnv, user);
    const second = await createSession(testEnv, user);
    const bystander = await createSession(testEnv);
    const listed = await call(api(), testEnv, `/v1/developer/end-users?app=${demoPublicAppId}&limit=100`, { token: developerKey });
    const refs = ((await listed.json()) as { data: Array<{ user_ref: string }> }).data.map((row) => row.user_ref);
    expect(refs).toContain(first.userRef);
    expect(second.userRef).toBe(first.userRef);

    const auditBefore = await sql(testEnv, `select count(*) as n from audit_logs where action = 'app.sessions_revoked'`);
    const response = await byRef(first.userRef);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ revoked_sessions: 2 });
    for (const session of [first, second]) {
      expect((await wallet(session.token)).status).toBe(401);
      expect((await chat(session.token)).status).toBe(401);
    }
    expect((await wallet(bystander.token)).status).toBe(200);

    const [audit] = await sql<{ actor_type: string; target_id: string; request_id: string; metadata: { sessions: string[] } }>(
      testEnv,
      `select actor_type, target_id, request_id, metadata from audit_logs where action = 'app.sessions_revoked'
        order by created_at desc limit 1`,
    );
    expect(audit).toMatchObject({ actor_type: 'developer', request_id: response.headers.get('x-request-id') });
    expect(audit!.metadata.sessions).toHaveLength(2);
    expect(JSON.stringify(audit)).not.toContain(user);
    expect(
      Number((await sql<{ n: string }>(testEnv, `select count(*) as n from audit_logs where action = 'app.sessions_revoked'`))[0]!.n),
    ).toBe(Number((auditBefore[0] as { n: string }).n) + 1);
    // Again: nothing left to revoke, still the user's ref (200), not an unknown one.
    expect(await (await byRef(first.userRef)).json()).toEqual({ revoked_sessions: 0 });
  });

  it("answers another developer's user_ref, an unknown one and a raw user id's hash with 404, revoking nothing", async () => {
    const other = await createDeveloperApp(testEnv, { policy: 'server' });
    const victim = await createSession(testEnv, `victim-${crypto.randomUUID()}`);
    const before = await liveSessions();
    for (const [ref, token] of [
      [victim.userRef, other.developerKey],
      ['0'.repeat(64), developerKey],
      [await hashExternalUserId(testEnv.SESSION_HASH_SECRET!, 'demo-user'), developerKey],
    ] as const) {
      const response = await byRef(ref, token);
      expect(response.status).toBe(404);
      const body = (await response.json()) as { error: { code: string; message: string; request_id: string } };
      expect(body.error).toEqual({ code: 'not_found', message: 'Unknown end user', request_id: response.headers.get('x-request-id') });
    }
    expect(await liveSessions()).toBe(before);
    expect((await wallet(victim.token)).status).toBe(200);
  });

  it('refuses a malformed user_ref (400), no key or a revoked one (401) and a suspended developer (403), revoking nothing', async () => {
    const victim = await createSession(testEnv);
    const before = await liveSessions();
    for (const malformed of [victim.userRef.toUpperCase(), victim.userRef.slice(1), `${victim.userRef}0`, 'demo-user', victim.sessionId]) {
      const response = await byRef(malformed);
      expect([malformed, response.status]).toEqual([malformed, 400]);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    }
    expect((await byRef(victim.userRef, null)).status).toBe(401);
    expect((await byRef(victim.userRef, `fdk_${'x'.repeat(43)}`)).status).toBe(401);
    const [demo] = await sql<{ developer_id: string }>(testEnv, `select developer_id from apps where public_app_id = $1`, [
      demoPublicAppId,
    ]);
    const spare = await call(api(), testEnv, '/v1/developer/keys', { json: { label: 'spare' }, token: developerKey });
    const spareKey = (await spare.json()) as { id: string; api_key: string };
    await call(api(), testEnv, `/v1/developer/keys/${spareKey.id}/revoke`, { method: 'POST', token: developerKey });
    expect((await byRef(victim.userRef, spareKey.api_key)).status).toBe(401);
    await call(api(), testEnv, `/v1/admin/developers/${demo!.developer_id}/suspend`, { method: 'POST', token: adminToken });
    try {
      const suspended = await byRef(victim.userRef);
      expect(suspended.status).toBe(403);
      expect(((await suspended.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    } finally {
      await call(api(), testEnv, `/v1/admin/developers/${demo!.developer_id}/unsuspend`, { method: 'POST', token: adminToken });
    }
    expect(await liveSessions()).toBe(before);
    expect((await wallet(victim.token)).status).toBe(200);
  });

  it('is described in the OpenAPI document: the user_ref path parameter and the refusals', async () => {
    const document = (await (await call(api(), testEnv, '/openapi.json')).json()) as {
      paths: Record<string, { post?: { parameters?: Array<{ name: string; in: string }>; responses: Record<string, unknown> } }>;
    };
    const operation = document.paths['/v1/developer/end-users/{user_ref}/revoke-sessions']?.post;
    expect(operation?.parameters).toEqual([expect.objectContaining({ name: 'user_ref', in: 'path' })]);
    expect(Object.keys(operation?.responses ?? {}).sort()).toEqual(['200', '400', '401', '403', '404', '429', '503']);
  });

  it('finds the user_ref in SQL exactly as the API computes it (pgcrypto HMAC = WebCrypto HMAC)', async () => {
    const session = await createSession(testEnv);
    expect(session.userRef).toBe(await userRef(testEnv.SESSION_HASH_SECRET, session.endUserId));
    const [demo] = await sql<{ developer_id: string }>(testEnv, `select developer_id from apps where public_app_id = $1`, [
      demoPublicAppId,
    ]);
    const { db, pool } = createDatabase(testEnv);
    try {
      const found = await findEndUserByRef(db, {
        secret: testEnv.SESSION_HASH_SECRET,
        developerId: demo!.developer_id,
        ref: session.userRef,
      });
      expect(found?.end_user_id).toBe(session.endUserId);
      const wrongSecret = await findEndUserByRef(db, { secret: 'another-secret', developerId: demo!.developer_id, ref: session.userRef });
      expect(wrongSecret).toBeUndefined();
    } finally {
      await pool.end();
    }
  });
});
