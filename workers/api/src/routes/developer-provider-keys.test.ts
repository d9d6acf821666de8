import { beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { auditRows, createDeveloper, fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
let demoDeveloperId: string;
beforeAll(async () => {
  testEnv = await createTestEnv();
  const [row] = await sql<{ developer_id: string }>(testEnv, `select developer_id from apps where public_app_id = 'app_demo_local'`);
  demoDeveloperId = row!.developer_id;
});

const path = '/v1/developer/provider-keys';

describe('developer provider keys', () => {
  it('creates a key with a monthly budget, shown masked with its budget and this month’s spend; audited as the developer', async () => {
    const { developerId, key } = await createDeveloper(testEnv);
    const apiKey = fakeOpenAiKey();
    const created = await send(testEnv, path, {
      json: { provider: 'openai', api_key: apiKey, label: 'prod', monthly_budget_usd: '25.00000000' },
      token: key,
      headers: { 'x-request-id': 'req-dev-create' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      provider: 'openai',
      label: 'prod',
      status: 'active',
      masked_key: `sk-proj-...${apiKey.slice(-4)}`,
      base_url: null,
      created_at: expect.any(String),
      disabled_at: null,
      monthly_budget_usd: '25.00000000',
      spent_this_month_usd: '0.00000000',
    });
    expect(created.text).not.toContain(apiKey);
    const [row] = await sql<{ owner_type: string; developer_id: string; end_user_id: string | null; monthly_budget_usd: string }>(
      testEnv,
      'select owner_type, developer_id, end_user_id, monthly_budget_usd::text from provider_credentials where id = $1',
      [created.body.id],
    );
    expect(row).toEqual({ owner_type: 'developer', developer_id: developerId, end_user_id: null, monthly_budget_usd: '25.00000000' });
    expect(await auditRows(testEnv, created.body.id)).toMatchObject([
      { actor_type: 'developer', actor_id: developerId, action: 'provider_key.created', request_id: 'req-dev-create' },
    ]);

    const listed = await send(testEnv, path, { token: key });
    expect(listed.body.data).toEqual([created.body]);
  });

  it.each([
    ['no budget', {}],
    ['a JSON number budget', { monthly_budget_usd: 25 }],
    ['a budget with 2 decimals', { monthly_budget_usd: '25.00' }],
    ['a negative budget', { monthly_budget_usd: '-1.00000000' }],
    ['an exponent', { monthly_budget_usd: '1e3' }],
  ])('refuses %s with 400', async (_, extra) => {
    const { key, developerId } = await createDeveloper(testEnv);
    const response = await send(testEnv, path, { json: { provider: 'openai', api_key: fakeOpenAiKey(), ...extra }, token: key });
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
    const [count] = await sql<{ n: number }>(testEnv, 'select count(*)::integer as n from provider_credentials where developer_id = $1', [
      developerId,
    ]);
    expect(count!.n).toBe(0);
  });

  it('needs a developer key; a session token or a wrong key is 401', async () => {
    expect((await send(testEnv, path, { token: 'fdk_wrong_key_0123456789' })).status).toBe(401);
    expect((await send(testEnv, path)).status).toBe(401);
  });

  it("keeps tenants apart: another developer's key id is 404 to list, disable and audit, and changes nothing", async () => {
    const intruder = await createDeveloper(testEnv);
    const created = await send(testEnv, path, {
      json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '1.00000000' },
      token: developerKey,
    });
    expect(created.status).toBe(201);
    const before = await sql(testEnv, 'select * from provider_credentials where id = $1', [created.body.id]);
    const auditBefore = await auditRows(testEnv, created.body.id);

    const response = await send(testEnv, `${path}/${created.body.id}`, { method: 'DELETE', token: intruder.key });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
    expect((await send(testEnv, path, { token: intruder.key })).body.data).toEqual([]);
    expect(await sql(testEnv, 'select * from provider_credentials where id = $1', [created.body.id])).toEqual(before);
    expect(await auditRows(testEnv, created.body.id)).toEqual(auditBefore);

    const disabled = await send(testEnv, `${path}/${created.body.id}`, { method: 'DELETE', token: developerKey });
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ status: 'disabled', monthly_budget_usd: '1.00000000' });
    const audit = await auditRows(testEnv, created.body.id);
    expect(audit.at(-1)).toMatchObject({ actor_type: 'developer', actor_id: demoDeveloperId, action: 'provider_key.disabled' });
  });

  it('disables idempotently under concurrent requests: one audit row, every answer "disabled"', async () => {
    const { key } = await createDeveloper(testEnv);
    const created = await send(testEnv, path, {
      json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '1.00000000' },
      token: key,
    });
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => send(testEnv, `${path}/${created.body.id}`, { method: 'DELETE', token: key })),
    );
    expect(answers.map((answer) => [answer.status, answer.body.status])).toEqual(Array(6).fill([200, 'disabled']));
    expect((await auditRows(testEnv, created.body.id)).filter((row) => row.action === 'provider_key.disabled')).toHaveLength(1);
  });
});
