import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, call, createTestEnv, developerKey, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

type Body = Record<string, any>;
const asDeveloper = async (token: string, path: string, init: { json?: unknown; method?: string } = {}) => {
  const response = await call(api(), testEnv, path, { ...init, token });
  return { status: response.status, body: (await response.json()) as Body };
};

describe('developer keys (self-service)', () => {
  it('creates a second live key shown once; both keys work; the list shows prefixes, never keys or hashes', async () => {
    const created = await asDeveloper(developerKey, '/v1/developer/keys', { json: { label: 'rotation' } });
    expect(created.status).toBe(201);
    const second = created.body.api_key as string;
    expect(second).toMatch(/^fdk_/);
    expect(created.body).toMatchObject({ label: 'rotation', prefix: second.slice(0, 12), revoked_at: null });

    for (const token of [developerKey, second]) {
      const list = await asDeveloper(token, '/v1/developer/keys');
      expect(list.status).toBe(200);
      expect(list.body.data.length).toBeGreaterThanOrEqual(2);
      expect(Object.keys(list.body.data[0]).sort()).toEqual(['created_at', 'id', 'label', 'last_used_at', 'prefix', 'revoked_at']);
      const text = JSON.stringify(list.body);
      expect(text).not.toContain(second);
      expect(text).not.toContain(developerKey);
    }
    const [row] = await sql<{ last_used_at: string | null }>(testEnv, 'select last_used_at from developer_keys where id = $1', [
      created.body.id,
    ]);
    expect(row!.last_used_at).not.toBeNull();
  });

  it('writes last_used_at at most once a minute', async () => {
    const created = await asDeveloper(developerKey, '/v1/developer/keys', { json: {} });
    await asDeveloper(created.body.api_key, '/v1/developer/keys');
    await sql(testEnv, `update developer_keys set last_used_at = now() - interval '30 seconds' where id = $1`, [created.body.id]);
    const [before] = await sql<{ last_used_at: Date }>(testEnv, 'select last_used_at from developer_keys where id = $1', [created.body.id]);
    await asDeveloper(created.body.api_key, '/v1/developer/keys');
    expect(await sql(testEnv, 'select last_used_at from developer_keys where id = $1', [created.body.id])).toEqual([before]);
    await sql(testEnv, `update developer_keys set last_used_at = now() - interval '2 minutes' where id = $1`, [created.body.id]);
    await asDeveloper(created.body.api_key, '/v1/developer/keys');
    const [after] = await sql<{ fresh: boolean }>(
      testEnv,
      `select last_used_at > now() - interval '10 seconds' as fresh from developer_keys where id = $1`,
      [created.body.id],
    );
    expect(after!.fresh).toBe(true);
  });

  it('revokes a key: 401 from the next request, idempotent, audited once; the other key lives on', async () => {
    const created = await asDeveloper(developerKey, '/v1/developer/keys', { json: { label: 'old' } });
    const path = `/v1/developer/keys/${created.body.id}/revoke`;
    const revoked = await asDeveloper(developerKey, path, { method: 'POST' });
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked_at).not.toBeNull();
    expect((await asDeveloper(developerKey, path, { method: 'POST' })).body.revoked_at).toBe(revoked.body.revoked_at);

    const refused = await call(api(), testEnv, '/v1/developer/keys', { token: created.body.api_key });
    expect(refused.status).toBe(401);
    const body = (await refused.json()) as Body;
    expect(body.error).toMatchObject({ code: 'unauthorized', request_id: refused.headers.get('x-request-id') });
    const session = await call(api(), testEnv, '/v1/sessions', {
      json: { public_app_id: 'app_demo_local', external_user_id: 'u1' },
      token: created.body.api_key,
    });
    expect(session.status).toBe(401);
    expect((await asDeveloper(developerKey, '/v1/developer/keys')).status).toBe(200);

    const audit = await sql<{ action: string; actor_type: string }>(
      testEnv,
      `select action, actor_type from audit_logs where target_type = 'developer_key' and target_id = $1 order by id`,
      [created.body.id],
    );
    expect(audit).toEqual([
      { action: 'developer_key.created', actor_type: 'developer' },
      { action: 'developer_key.revoked', actor_type: 'developer' },
    ]);
  });

  it('refuses to revoke the last live key (409 invalid_state)', async () => {
    const onboarded = await call(api(), testEnv, '/v1/admin/developers', {
      json: { name: 'Solo', email: 'solo@example.test' },
      token: adminToken,
    });
    const { key } = (await onboarded.json()) as Body;
    const refused = await asDeveloper(key.api_key, `/v1/developer/keys/${key.id}/revoke`, { method: 'POST' });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('invalid_state');
    expect((await asDeveloper(key.api_key, '/v1/developer/keys')).status).toBe(200);
  });

  it("shows the developer their own audit log, a page at a time, and none of another developer's rows", async () => {
    await asDeveloper(developerKey, '/v1/developer/keys', { json: { label: 'audited' } });
    const first = await asDeveloper(developerKey, '/v1/developer/audit-log?limit=1');
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(1);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await asDeveloper(developerKey, `/v1/developer/audit-log?limit=100&cursor=${first.body.next_cursor}`);
    expect(second.body.data.every((row: Body) => Number(row.id) < Number(first.body.data[0].id))).toBe(true);
    const [demo] = await sql<{ id: string }>(testEnv, `select id from developers where email = 'demo@faucet.local'`);
    for (const row of [...first.body.data, ...second.body.data]) {
      expect(row.actor_id === demo!.id || row.target_id === demo!.id).toBe(true);
    }
  });
});
