/** Stored keys add no database round trip to the gateway: authorize (one statement) and settle (one). */
import { beforeAll, describe, expect, it } from 'vitest';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayWith } from '../../../test/gateway-kit.ts';
import { createTestEnv, developerKey, type TestEnv } from '../../../test/harness.ts';
import { createDatabase, observeStatements } from '#shared/db.ts';
import type { Env } from '#shared/env.ts';
import { fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
let statements = 0;
const countingDatabase = (env: Env) =>
  observeStatements(createDatabase(env), (run) => {
    statements++;
    return run();
  });
const gateway = gatewayWith({
  upstreamFetch: fakeUpstream(() => jsonResponse(openAiCompletion('ok'))).fetch,
  openDatabase: countingDatabase,
});
const hi = { model: 'openai:gpt-4o-mini', feature: 'chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 7 };

beforeAll(async () => {
  testEnv = await createTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-key-for-tests-000000' });
});

async function statementsFor(token: string, body: Record<string, unknown>) {
  statements = 0;
  const response = await chat(gateway, testEnv, token, body);
  expect(response.status).toBe(200);
  return { routeMode: ((await response.json()) as { faucet: { route_mode: string } }).faucet.route_mode, statements };
}

describe('database round trips per gateway call', () => {
  it('are two on the byok and developer_key routes, as on the platform route', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    expect(await statementsFor(session.token, hi)).toEqual({ routeMode: 'platform', statements: 2 });
    await send(testEnv, '/v1/user/provider-keys', { json: { provider: 'openai', api_key: fakeOpenAiKey() }, token: session.token });
    expect(await statementsFor(session.token, { ...hi, route_mode: 'byok' })).toEqual({ routeMode: 'byok', statements: 2 });
    await send(testEnv, '/v1/developer/provider-keys', {
      json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '1.00000000' },
      token: developerKey,
    });
    expect(await statementsFor(session.token, hi)).toEqual({ routeMode: 'developer_key', statements: 2 });
  });
});
