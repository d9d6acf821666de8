/**
 * A developer's suspension, and its lifting, take effect on their end users' very next call on the
 * lease path too: the API tells the wallet objects of the developer's apps to read their contexts
 * again, instead of serving a cached one for its few seconds.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, call, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { chat, fundedSession, gatewayTestEnv, gatewayWith, settled, userMessage } from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

const hello = { model: 'mock:echo', feature: 'chat', messages: [userMessage('hello')], max_tokens: 5 };
const setSuspended = async (developerId: string, action: 'suspend' | 'unsuspend') =>
  (await call(api(), testEnv, `/v1/admin/developers/${developerId}/${action}`, { method: 'POST', token: adminToken })).status;

describe('suspending a developer or archiving an app, on the lease path', () => {
  it("refuses the end user's very next call with 403, and serves the very next one after unsuspend", async () => {
    const [demo] = await sql<{ id: string }>(testEnv, 'select developer_id as id from apps where public_app_id = $1', [demoPublicAppId]);
    const session = await fundedSession(testEnv, '1.00000000');
    // The wallet object takes its lease and caches the session's context.
    expect((await chat(gatewayWith(), testEnv, session.token, hello)).status).toBe(200);

    expect(await setSuspended(demo!.id, 'suspend')).toBe(200);
    try {
      const refused = await chat(gatewayWith(), testEnv, session.token, hello);
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    } finally {
      expect(await setSuspended(demo!.id, 'unsuspend')).toBe(200);
    }
    expect((await chat(gatewayWith(), testEnv, session.token, hello)).status).toBe(200);

    await settled(testEnv);
    const ledger = await call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token: adminToken });
    expect(((await ledger.json()) as { ok: boolean }).ok).toBe(true);
    const audit = await call(api(), testEnv, '/v1/admin/reconciliation/upstream', { token: adminToken });
    expect(await audit.json()).toMatchObject({ ok: true, unbilled_calls: 0 });
  });

  it('refuses the very next call once the developer archives the app', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    expect((await chat(gatewayWith(), testEnv, session.token, hello)).status).toBe(200);
    const archived = await call(api(), testEnv, `/v1/developer/apps/${demoPublicAppId}/archive`, { method: 'POST', token: developerKey });
    expect(archived.status).toBe(200);
    try {
      expect((await chat(gatewayWith(), testEnv, session.token, hello)).status).toBe(403);
    } finally {
      await sql(testEnv, 'update apps set archived_at = null where public_app_id = $1', [demoPublicAppId]);
    }
    await settled(testEnv);
  });
});
