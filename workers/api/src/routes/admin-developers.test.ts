import { beforeAll, describe, expect, it } from 'vitest';
import {
  adminToken,
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

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

type Body = Record<string, any>;
const admin = async (path: string, init: { json?: unknown; method?: string } = {}) => {
  const response = await call(api(), testEnv, path, { ...init, token: adminToken });
  return { status: response.status, body: (await response.json()) as Body, requestId: response.headers.get('x-request-id') };
};
const chat = (token: string) =>
  call(gateway(), testEnv, '/v1/chat/completions', {
    json: { model: 'mock:echo', feature: 'chat', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    token,
  });

describe('developers (admin)', () => {
  it('creates a developer with a wallet and a first fdk_ key shown once, which works at once', async () => {
    const created = await admin('/v1/admin/developers', {
      json: { name: 'Second Co', email: 'second@example.test', payout_details_ref: 'stripe-acct-ref-1' },
    });
    expect(created.status).toBe(201);
    expect(created.body.developer).toMatchObject({ name: 'Second Co', email: 'second@example.test', suspended: false });
    expect(created.body.key.api_key).toMatch(/^fdk_/);
    const [wallet] = await sql(testEnv, `select kind from wallets where developer_id = $1`, [created.body.developer.id]);
    expect(wallet).toEqual({ kind: 'developer' });
    const keys = await call(api(), testEnv, '/v1/developer/keys', { token: created.body.key.api_key });
    expect(keys.status).toBe(200);
    expect(JSON.stringify(await keys.json())).not.toContain(created.body.key.api_key);

    const [audit] = await sql<{ action: string; actor_type: string; request_id: string; metadata: Body }>(
      testEnv,
      `select action, actor_type, request_id, metadata from audit_logs where target_id = $1`,
      [created.body.developer.id],
    );
    expect(audit).toMatchObject({ action: 'developer.created', actor_type: 'admin', request_id: created.requestId });
    expect(audit!.metadata.after).toMatchObject({ email: 'second@example.test', suspended: false });
    expect(JSON.stringify(audit)).not.toContain(created.body.key.api_key);
  });

  it('refuses a second developer with the same email (409, nothing written)', async () => {
    await admin('/v1/admin/developers', { json: { name: 'A', email: 'dup@example.test' } });
    const [before] = await sql(testEnv, 'select (select count(*) from developers) d, (select count(*) from developer_keys) k');
    const again = await admin('/v1/admin/developers', { json: { name: 'B', email: 'dup@example.test' } });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
    expect(await sql(testEnv, 'select (select count(*) from developers) d, (select count(*) from developer_keys) k')).toEqual([before]);
  });

  it('lists developers a page at a time, never with a key or hash', async () => {
    for (const n of [1, 2, 3]) await admin('/v1/admin/developers', { json: { name: `P${n}`, email: `page-${n}@example.test` } });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await admin(`/v1/admin/developers?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.data.map((developer: Body) => developer.id));
      expect(JSON.stringify(page.body)).not.toMatch(/fdk_|hash/);
      cursor = page.body.next_cursor;
    } while (cursor);
    const [{ count }] = (await sql<{ count: string }>(testEnv, 'select count(*) from developers')) as [{ count: string }];
    expect(new Set(seen).size).toBe(Number(count));
  });

  it("suspends: the developer's key gets 403, their apps refuse new sessions and gateway calls; unsuspend restores both", async () => {
    const [demo] = await sql<{ id: string }>(testEnv, `select developer_id as id from apps where public_app_id = $1`, [demoPublicAppId]);
    const session = await createSession(testEnv);
    const suspend = await admin(`/v1/admin/developers/${demo!.id}/suspend`, { method: 'POST' });
    expect(suspend.status).toBe(200);
    expect(suspend.body.suspended).toBe(true);
    expect((await admin(`/v1/admin/developers/${demo!.id}/suspend`, { method: 'POST' })).body.suspended).toBe(true);

    const refusedSession = await call(api(), testEnv, '/v1/sessions', {
      json: { public_app_id: demoPublicAppId, external_user_id: 'someone' },
      token: developerKey,
    });
    expect(refusedSession.status).toBe(403);
    expect(((await refusedSession.json()) as Body).error.code).toBe('forbidden');
    const refusedCall = await chat(session.token);
    expect(refusedCall.status).toBe(403);
    const refusedBody = (await refusedCall.json()) as Body;
    expect(refusedBody.error).toMatchObject({ code: 'forbidden', request_id: refusedCall.headers.get('x-request-id') });
    expect(await sql(testEnv, 'select 1 from gateway_calls')).toEqual([]);
    expect((await call(api(), testEnv, '/v1/developer/keys', { token: developerKey })).status).toBe(403);

    expect((await admin(`/v1/admin/developers/${demo!.id}/unsuspend`, { method: 'POST' })).body.suspended).toBe(false);
    expect((await createSession(testEnv)).token).toMatch(/^fvs_/);
    // Past authorization: the unfunded wallet answers 402.
    expect((await chat(session.token)).status).toBe(402);

    const actions = await sql<{ action: string }>(
      testEnv,
      `select action from audit_logs where target_type = 'developer' and target_id = $1 order by id`,
      [demo!.id],
    );
    // The seed created it through the same service; the repeated suspend wrote no second row.
    expect(actions.map((row) => row.action)).toEqual(['developer.created', 'developer.suspended', 'developer.unsuspended']);
  });

  it('answers 404 for an unknown or malformed developer id and 401 without the admin token', async () => {
    expect((await admin(`/v1/admin/developers/${crypto.randomUUID()}/suspend`, { method: 'POST' })).status).toBe(404);
    expect((await admin('/v1/admin/developers/not-a-uuid/suspend', { method: 'POST' })).status).toBe(404);
    const anonymous = await call(api(), testEnv, '/v1/admin/developers', {});
    expect(anonymous.status).toBe(401);
    const byDeveloper = await call(api(), testEnv, '/v1/admin/developers', {
      json: { name: 'x', email: 'x@example.test' },
      token: developerKey,
    });
    expect(byDeveloper.status).toBe(401);
  });

  it('shows the admin the whole audit log, or one developer’s', async () => {
    const created = await admin('/v1/admin/developers', { json: { name: 'Audited', email: 'audited@example.test' } });
    const id = created.body.developer.id;
    const all = await admin('/v1/admin/audit-log?limit=100');
    expect(all.status).toBe(200);
    expect(all.body.data.some((row: Body) => row.target_id === id)).toBe(true);
    const one = await admin(`/v1/admin/audit-log?developer_id=${id}`);
    expect(one.body.data.map((row: Body) => row.action)).toEqual(['developer.created']);
  });
});
