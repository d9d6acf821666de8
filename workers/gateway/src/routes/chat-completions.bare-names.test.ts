/**
 * Bare model names: an OpenAI client's `gpt-4o-mini` goes to its default provider,
 * is held, sent, rated and booked exactly as `openai:gpt-4o-mini` would be, and the faucet object
 * and usage record name the provider it resolved to. A bare name with no default is refused (400)
 * before anything is written or sent.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { FaucetObject } from '../metering/faucet-object.ts';
import { sql, type TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayTestEnv, gatewayWith, settled, usageRows, userMessage, wallet } from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

interface CompletionBody {
  faucet: FaucetObject;
}

describe('bare model names', () => {
  it('sends gpt-4o-mini to OpenAI, bills it at openai:gpt-4o-mini, and says so', async () => {
    const upstream = fakeUpstream(() =>
      jsonResponse(openAiCompletion('Paris.', { prompt_tokens: 1_000, completion_tokens: 500, total_tokens: 1_500 })),
    );
    const session = await fundedSession(testEnv);
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'gpt-4o-mini',
      messages: [userMessage('Capital of France?')],
    });
    expect(response.status).toBe(200);
    const { faucet } = (await response.json()) as CompletionBody;
    // 1,000 × 0.15 + 500 × 0.60 per million = 0.00045; × 1.2 retail.
    expect(faucet).toMatchObject({
      provider: 'openai',
      model: 'gpt-4o-mini',
      charge: { amount_usd: '0.00054000', upstream_cost_usd: '0.00045000' },
    });
    expect(upstream.requests).toHaveLength(1);
    expect(upstream.requests[0]?.url).toBe('https://api.openai.com/v1/chat/completions');
    expect(upstream.requests[0]?.body).toMatchObject({ model: 'gpt-4o-mini' });
    await settled(testEnv);
    const [row] = await usageRows(testEnv, faucet.request_id);
    expect(row).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini', retail_usd: '0.00054000' });
  });

  it('resolves the demo model echo to mock:echo', async () => {
    const session = await fundedSession(testEnv);
    const response = await chat(gatewayWith(), testEnv, session.token, { model: 'echo', messages: [userMessage('hi')] });
    expect(response.status).toBe(200);
    expect(((await response.json()) as CompletionBody).faucet).toMatchObject({ provider: 'mock', model: 'echo' });
  });

  it.each(['llama-3-70b', 'text-davinci-003x', 'Gpt-4o-mini'])(
    'refuses %s (no default provider) with 400, nothing held or sent',
    async (model) => {
      const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('never')));
      const session = await fundedSession(testEnv);
      const before = await wallet(testEnv, session.walletId);
      const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
        model,
        messages: [userMessage('hi')],
      });
      expect(response.status).toBe(400);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('invalid_request');
      expect(body.error.message).toContain('names no provider');
      expect(upstream.requests).toHaveLength(0);
      expect(await wallet(testEnv, session.walletId)).toEqual(before);
      const calls = await sql<{ count: number }>(testEnv, 'select count(*)::int as count from gateway_calls where end_user_id = $1', [
        session.endUserId,
      ]);
      expect(calls[0]?.count).toBe(0);
    },
  );

  it('still answers 401, not 400, to a bare name without a live session', async () => {
    const response = await chat(gatewayWith(), testEnv, 'fvs_not-a-session', { model: 'llama-3-70b', messages: [userMessage('hi')] });
    expect(response.status).toBe(401);
  });
});
