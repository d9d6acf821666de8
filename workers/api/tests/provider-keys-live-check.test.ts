/** The live check on the create endpoints, with the provider intercepted (it is off by default and in other tests). */
import { beforeAll, describe, expect, it } from 'vitest';
import { registerDeveloperProviderKeyRoutes } from '../src/routes/developer-provider-keys.ts';
import { registerUserProviderKeyRoutes } from '../src/routes/user-provider-keys.ts';
import { fakeUpstream, jsonResponse } from '../../test/fake-upstream.ts';
import { createSession, createTestEnv, developerKey, sql, type TestEnv } from '../../test/harness.ts';
import { createServiceApp } from '#shared/app.ts';
import { fakeOpenAiKey, send } from '../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv({ PROVIDER_KEY_LIVE_CHECK: 'true' });
});

function apiWithProvider(status: number) {
  const provider = fakeUpstream(() => jsonResponse({ data: [] }, status));
  const app = createServiceApp({
    service: 'api',
    title: 'test',
    version: '0',
    rateLimit: {
      maxRequestsSetting: 'API_RATE_LIMIT_MAX_REQUESTS',
      windowMsSetting: 'API_RATE_LIMIT_WINDOW_MS',
      defaultMaxRequests: 0,
      defaultWindowMs: 60_000,
    },
    defaultMaxBodyBytes: 65_536,
  });
  registerUserProviderKeyRoutes(app, { fetch: provider.fetch });
  registerDeveloperProviderKeyRoutes(app, { fetch: provider.fetch });
  return { app, provider };
}

describe('PROVIDER_KEY_LIVE_CHECK=true', () => {
  it('stores a key the provider accepts, after asking it with that key', async () => {
    const { app, provider } = apiWithProvider(200);
    const session = await createSession(testEnv);
    const apiKey = fakeOpenAiKey();
    const created = await send(
      testEnv,
      '/v1/user/provider-keys',
      { json: { provider: 'openai', api_key: apiKey }, token: session.token },
      app,
    );
    expect(created.status).toBe(201);
    expect(provider.requests.map((request) => [request.url, request.headers.authorization])).toEqual([
      ['https://api.openai.com/v1/models', `Bearer ${apiKey}`],
    ]);
  });

  it('refuses a key the provider refuses with 400 and stores nothing', async () => {
    const { app } = apiWithProvider(401);
    const created = await send(
      testEnv,
      '/v1/developer/provider-keys',
      { json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '1.00000000' }, token: developerKey },
      app,
    );
    expect(created.status).toBe(400);
    expect(created.body.error.code).toBe('invalid_request');
    expect(await sql(testEnv, `select 1 from provider_credentials where owner_type = 'developer'`)).toEqual([]);
  });
});
