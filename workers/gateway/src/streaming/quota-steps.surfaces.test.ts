/**
 * Holds that grow with the answer (docs/quota.md): spend limits and a developer key's budget grant
 * quota steps as the balance does, and every surface ends a cut answer in its own protocol's words.
 * Each ends on the upstream audit and reconciliation.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { TestEnv } from '../../../test/harness.ts';
import { fundedSession, gatewayTestEnv, gatewayWith, postToGateway, settled, wallet } from '../../../test/gateway-kit.ts';
import { limitedApp } from '../../../test/limits-kit.ts';
import { fakeOpenAiKey, send } from '../../../test/provider-keys-kit.ts';
import { costly, generatingProvider, stream } from '../../../test/quota-kit.ts';
import { expectBooksAgree, unitsOf } from '../../../test/wallet-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

describe('limits and budgets grant steps as the balance does', () => {
  it('a month spend limit refuses the step: the answer ends, naming it, within the limit', async () => {
    const limited = await limitedApp(testEnv, { spendPerMonthUsd: '0.05000000' });
    const session = await limited.session('5.00000000');
    const provider = generatingProvider();
    const answer = await stream(testEnv, gatewayWith({ upstreamFetch: provider.upstream.fetch }), session.token, costly);
    expect(answer.status).toBe(200);
    expect(answer.finishReasons).toEqual(['length']);
    expect(answer.faucet).toMatchObject({ cut_reason: 'spend_limit_month' });
    expect(unitsOf(answer.faucet?.charge.amount_usd)).toBeLessThanOrEqual(unitsOf('0.05000000'));
    await settled(testEnv);
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  });

  it("a developer key's monthly budget refuses the step: budget_exceeded, the cost within the budget", async () => {
    const limited = await limitedApp(testEnv);
    const key = await send(testEnv, '/v1/developer/provider-keys', {
      json: { provider: 'openai', api_key: fakeOpenAiKey(), monthly_budget_usd: '0.05000000' },
      token: limited.developerKey,
    });
    expect(key.status).toBe(201);
    const session = await limited.session('5.00000000');
    const provider = generatingProvider();
    const answer = await stream(testEnv, gatewayWith({ upstreamFetch: provider.upstream.fetch }), session.token, {
      ...costly,
      route_mode: 'developer_key',
    });
    expect(answer.status).toBe(200);
    expect(answer.faucet).toMatchObject({ route_mode: 'developer_key', cut_reason: 'budget_exceeded' });
    expect(unitsOf(answer.faucet?.charge.upstream_cost_usd)).toBeLessThanOrEqual(unitsOf('0.05000000'));
    await settled(testEnv);
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  });
});

describe('every surface ends a cut answer in its own words', () => {
  async function post(path: string, token: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    const provider = generatingProvider();
    const { text, status } = await postToGateway(gatewayWith({ upstreamFetch: provider.upstream.fetch }), testEnv, path, body, {
      authorization: `Bearer ${token}`,
      ...headers,
    });
    const events = text
      .split('\n\n')
      .map((event) =>
        event
          .split('\n')
          .find((line) => line.startsWith('data: '))
          ?.slice('data: '.length),
      )
      .filter((data): data is string => data !== undefined && data !== '[DONE]')
      .map((data) => JSON.parse(data) as Record<string, any>);
    return { status, text, events, provider };
  }

  /** After a cut: the wallet is not below zero, and the books agree with what the provider generated. */
  async function expectBooked(walletId: string, provider: ReturnType<typeof generatingProvider>) {
    await settled(testEnv);
    expect(unitsOf((await wallet(testEnv, walletId)).balance)).toBeGreaterThanOrEqual(0n);
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  }

  it('Anthropic Messages: stop_reason "max_tokens", and the faucet object says why', async () => {
    const session = await fundedSession(testEnv, '0.05000000');
    const { status, events, provider } = await post(
      '/v1/messages',
      session.token,
      { model: 'openai:gpt-4o', max_tokens: 32_000, stream: true, messages: [{ role: 'user', content: 'Write a long story' }] },
      { 'anthropic-version': '2023-06-01' },
    );
    expect(status).toBe(200);
    const delta = events.find((event) => event.type === 'message_delta');
    expect(delta).toMatchObject({ delta: { stop_reason: 'max_tokens' }, faucet: { cut_reason: 'insufficient_balance' } });
    expect(events.at(-1)).toMatchObject({ type: 'message_stop' });
    await expectBooked(session.walletId, provider);
  });

  it('OpenAI Responses: status "incomplete" for max_output_tokens, and the faucet object says why', async () => {
    const session = await fundedSession(testEnv, '0.05000000');
    const { status, events, provider } = await post('/v1/responses', session.token, {
      model: 'openai:gpt-4o',
      max_output_tokens: 32_000,
      stream: true,
      input: 'Write a long story',
    });
    expect(status).toBe(200);
    expect(events.at(-1)).toMatchObject({
      type: 'response.incomplete',
      response: {
        status: 'incomplete',
        incomplete_details: { reason: 'max_output_tokens' },
        faucet: { cut_reason: 'insufficient_balance' },
      },
    });
    await expectBooked(session.walletId, provider);
  });

  it('Anthropic Messages not streamed: the whole message ends with stop_reason "max_tokens", its faucet object saying why', async () => {
    const session = await fundedSession(testEnv, '0.05000000');
    const { status, text, provider } = await post(
      '/v1/messages',
      session.token,
      { model: 'openai:gpt-4o', max_tokens: 32_000, messages: [{ role: 'user', content: 'Write a long story' }] },
      { 'anthropic-version': '2023-06-01' },
    );
    expect(status).toBe(200);
    const message = JSON.parse(text) as Record<string, any>;
    expect(message).toMatchObject({ type: 'message', stop_reason: 'max_tokens', faucet: { cut_reason: 'insufficient_balance' } });
    expect(message.content[0].text.length).toBeGreaterThan(2_000);
    expect(provider.upstream.requests[0]?.body).toMatchObject({ stream: true });
    await expectBooked(session.walletId, provider);
  });

  it('OpenAI Responses not streamed: status "incomplete" for max_output_tokens, its faucet object saying why', async () => {
    const session = await fundedSession(testEnv, '0.05000000');
    const { status, text, provider } = await post('/v1/responses', session.token, {
      model: 'openai:gpt-4o',
      max_output_tokens: 32_000,
      input: 'Write a long story',
    });
    expect(status).toBe(200);
    expect(JSON.parse(text)).toMatchObject({
      object: 'response',
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      faucet: { cut_reason: 'insufficient_balance' },
    });
    await expectBooked(session.walletId, provider);
  });
});
