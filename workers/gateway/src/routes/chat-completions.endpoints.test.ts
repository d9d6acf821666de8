/**
 * Calls through registered endpoints (migration 0016): a developer's Azure resource and an end user's
 * custom OpenAI-compatible server are called at the root stored with their key, with that key; a root
 * that is not public is refused again by the outbound fetch at call time, nothing sent, nothing billed.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { randomToken } from '#shared/crypto.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import {
  chat,
  expectNothingHeldOrBooked,
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  settled,
  usageRows,
  userMessage,
} from '../../../test/gateway-kit.ts';
import { developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { send } from '../../../test/provider-keys-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv();
});

const token = (length: number) =>
  randomToken('', length)
    .replace(/[^A-Za-z0-9]/g, 'x')
    .slice(0, length);
const answering = () => fakeUpstream(() => jsonResponse(openAiCompletion('Paris.')));

async function storeKey(path: string, authorization: string, json: Record<string, unknown>): Promise<string> {
  const stored = await send(testEnv, path, { json, token: authorization });
  expect(stored.status).toBe(201);
  return stored.body.id as string;
}

describe('registered endpoints', () => {
  it("developer_key: an Azure deployment is called at the developer's resource, api-version and key, and booked on that key", async () => {
    const azureKey = token(32);
    const credentialId = await storeKey('/v1/developer/provider-keys', developerKey, {
      provider: 'azure',
      api_key: azureKey,
      monthly_budget_usd: '5.00000000',
      base_url: 'https://contoso-eu.openai.azure.com/openai?api-version=2025-01-01-preview',
    });
    const session = await fundedSession(testEnv);
    const upstream = answering();
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'azure:gpt-4o-mini',
      route_mode: 'developer_key',
      messages: [userMessage('Capital of France?')],
    });
    expect(response.status).toBe(200);
    expect(upstream.requests).toHaveLength(1);
    expect(upstream.requests[0]!.url).toBe(
      'https://contoso-eu.openai.azure.com/openai/deployments/gpt-4o-mini/chat/completions?api-version=2025-01-01-preview',
    );
    expect(upstream.requests[0]!.headers['api-key']).toBe(azureKey);
    expect(upstream.requests[0]!.headers.authorization).toBeUndefined();
    await settled(testEnv);
    const [usage] = await usageRows(testEnv, response.headers.get('x-request-id')!);
    expect(usage).toMatchObject({ route_mode: 'developer_key', provider: 'azure', model: 'gpt-4o-mini' });
    const [row] = await sql<{ provider_credential_id: string }>(
      testEnv,
      'select provider_credential_id from usage_events where client_request_id = $1',
      [response.headers.get('x-request-id')],
    );
    expect(row!.provider_credential_id).toBe(credentialId);
  });

  it("byok: an end user's custom server is called at its root with their key (its own model name)", async () => {
    const session = await fundedSession(testEnv);
    const userKey = `vllm-${token(24)}`;
    await storeKey('/v1/user/provider-keys', session.token, {
      provider: 'custom',
      api_key: userKey,
      base_url: 'https://llm.example.com/v1',
    });
    const upstream = answering();
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'custom:meta-llama/Llama-3.1-8B-Instruct',
      route_mode: 'byok',
      messages: [userMessage('Capital of France?')],
    });
    expect(response.status).toBe(200);
    expect(upstream.requests.map((request) => request.url)).toEqual(['https://llm.example.com/v1/chat/completions']);
    expect(upstream.requests[0]!.headers.authorization).toBe(`Bearer ${userKey}`);
    expect((upstream.requests[0]!.body as { model: string }).model).toBe('meta-llama/Llama-3.1-8B-Instruct');
  });

  it('developer_key: a custom model the catalog does not price is refused with 400 before anything is sent or held', async () => {
    await storeKey('/v1/developer/provider-keys', developerKey, {
      provider: 'custom',
      api_key: `vllm-${token(24)}`,
      monthly_budget_usd: '5.00000000',
      base_url: 'https://llm.example.com/v1',
    });
    const session = await fundedSession(testEnv);
    const upstream = answering();
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'custom:my-finetune',
      route_mode: 'developer_key',
      messages: [userMessage('hi')],
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/no catalog price/);
    expect(upstream.requests).toEqual([]);
  });

  it('a stored root that is not public (written around the API) is refused by the outbound fetch: 502, nothing sent, nothing billed', async () => {
    const session = await fundedSession(testEnv);
    const userKey = `vllm-${token(24)}`;
    const id = await storeKey('/v1/user/provider-keys', session.token, {
      provider: 'custom',
      api_key: userKey,
      base_url: 'https://llm.example.com/v1',
    });
    await sql(testEnv, `update provider_credentials set base_url = 'http://169.254.169.254/latest' where id = $1`, [id]);
    const upstream = answering();
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'custom:my-model',
      route_mode: 'byok',
      messages: [userMessage('hi')],
    });
    expect(response.status).toBe(502);
    const body = await response.text();
    expect(body).toContain('upstream_error');
    expect(body).not.toContain(userKey);
    expect(upstream.requests).toEqual([]);
    await expectNothingHeldOrBooked(testEnv, session.walletId, response.headers.get('x-request-id')!);
  });
});
