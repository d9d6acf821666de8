import { beforeAll, describe, expect, it } from 'vitest';
import { api, adminToken, call, createSession, createTestEnv, demoPublicAppId, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

interface UsageList {
  data: { request_id: string; route_mode: string; charged_usd: string; input_tokens: number; estimated: boolean; created_at: string }[];
}

async function reportLocal(session: { token: string; userRef: string }, requestId: string, inputTokens: number) {
  const response = await call(api(), testEnv, '/v1/usage/local', {
    token: session.token,
    json: {
      request_id: requestId,
      public_app_id: demoPublicAppId,
      user_id_hash: session.userRef,
      feature: 'chat',
      route_mode: 'local',
      provider: 'lmstudio',
      model: 'qwen2.5',
      input_tokens: inputTokens,
      output_tokens: 5,
      estimated: false,
      occurred_at: new Date().toISOString(),
    },
  });
  expect(response.status).toBe(200);
}

describe('GET /v1/user/usage', () => {
  it("lists the session user's calls newest first, and only theirs", async () => {
    const alice = await createSession(testEnv);
    const bob = await createSession(testEnv);
    for (const [index, id] of ['u-1', 'u-2', 'u-3'].entries()) await reportLocal(alice, `${alice.endUserId}-${id}`, index + 1);
    await reportLocal(bob, `${bob.endUserId}-u-1`, 99);

    const response = await call(api(), testEnv, '/v1/user/usage', { token: alice.token });
    expect(response.status).toBe(200);
    const { data } = (await response.json()) as UsageList;
    expect(data.map((record) => record.request_id)).toEqual([`${alice.endUserId}-u-3`, `${alice.endUserId}-u-2`, `${alice.endUserId}-u-1`]);
    expect(data[0]).toMatchObject({
      route_mode: 'local',
      charged_usd: '0.00000000',
      input_tokens: 3,
      estimated: false,
      feature_key: 'chat',
    });
  });

  it('honours limit', async () => {
    const session = await createSession(testEnv);
    for (const id of ['l-1', 'l-2']) await reportLocal(session, `${session.endUserId}-${id}`, 1);
    const response = await call(api(), testEnv, '/v1/user/usage?limit=1', { token: session.token });
    const { data } = (await response.json()) as UsageList;
    expect(data.map((record) => record.request_id)).toEqual([`${session.endUserId}-l-2`]);
  });

  it.each(['0', '101', '-1', 'abc', '1.5'])('refuses limit=%s with 400', async (limit) => {
    const session = await createSession(testEnv);
    const response = await call(api(), testEnv, `/v1/user/usage?limit=${limit}`, { token: session.token });
    expect(response.status).toBe(400);
  });

  it('refuses a request without a session with 401', async () => {
    expect((await call(api(), testEnv, '/v1/user/usage', { token: adminToken })).status).toBe(401);
  });

  it("answers one call by its request ID (a receipt), and only the session user's", async () => {
    const alice = await createSession(testEnv);
    const bob = await createSession(testEnv);
    for (const id of ['r-1', 'r-2']) await reportLocal(alice, `${alice.endUserId}-${id}`, 7);
    await reportLocal(bob, `${bob.endUserId}-r-1`, 9);
    const receipt = async (token: string, requestId: string) => {
      const response = await call(api(), testEnv, `/v1/user/usage?request_id=${encodeURIComponent(requestId)}`, { token });
      expect(response.status).toBe(200);
      return ((await response.json()) as UsageList).data.map((record) => record.request_id);
    };
    expect(await receipt(alice.token, `${alice.endUserId}-r-1`)).toEqual([`${alice.endUserId}-r-1`]);
    // Another user's call is not theirs to see, and a request ID of nothing is an empty list.
    expect(await receipt(alice.token, `${bob.endUserId}-r-1`)).toEqual([]);
    expect(await receipt(alice.token, 'no-such-request')).toEqual([]);
    const empty = await call(api(), testEnv, '/v1/user/usage?request_id=', { token: alice.token });
    expect(empty.status).toBe(400);
  });
});
