import { beforeAll, describe, expect, it } from 'vitest';
import type { FaucetObject } from '../metering/faucet-object.ts';
import { formatUsd, parseWireAmount, subtractUsd } from '#shared/money/index.ts';
import { rateUsage, ratingSettingsFor } from '#shared/rating/index.ts';
import type { TestEnv } from '../../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import {
  chat,
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  newRequestId,
  settled,
  usageRows,
  userMessage,
  wallet,
} from '../../../test/gateway-kit.ts';
import { countPromptTokens } from '../tokens/count-prompt-tokens.ts';
import { countTokens } from '../tokens/tokenize.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test', ANTHROPIC_API_KEY: 'sk-ant-platform-pool-test' });
});

interface CompletionBody {
  object: string;
  choices: Array<{ message: { content: string } }>;
  usage: { prompt_tokens: number; completion_tokens: number };
  faucet: FaucetObject;
}

describe('POST /v1/chat/completions on the platform route', () => {
  it('answers mock:echo with the completion, its faucet object, one usage record and the exact charge', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    const messages = [userMessage('Hello there')];
    const response = await chat(gatewayWith(), testEnv, session.token, { model: 'mock:echo', feature: 'chat', messages }, requestId);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe(requestId);
    expect(response.headers.get('server-timing')).toMatch(/^authorize;dur=[\d.]+, upstream;dur=[\d.]+, settle;dur=[\d.]+$/);
    const body = (await response.json()) as CompletionBody;

    const inputTokens = countPromptTokens(messages);
    const outputTokens = countTokens('Echo: Hello there');
    const rated = rateUsage(
      { routeMode: 'platform', provider: 'mock', model: 'echo', inputTokens, outputTokens, estimated: false },
      {},
      ratingSettingsFor(testEnv, 5000),
    );
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0]?.message.content).toBe('Echo: Hello there');
    expect(body.usage).toMatchObject({ prompt_tokens: inputTokens, completion_tokens: outputTokens });
    expect(body.faucet).toEqual({
      request_id: requestId,
      feature: 'chat',
      route_mode: 'platform',
      provider: 'mock',
      model: 'echo',
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      estimated: false,
      charge: { currency: 'USD', amount_usd: formatUsd(rated.retailUsd), upstream_cost_usd: formatUsd(rated.upstreamCostUsd) },
    });
    expect(body.faucet.charge.amount_usd).toMatch(/^\d+\.\d{8}$/);
    await settled(testEnv);

    expect(await usageRows(testEnv, requestId)).toEqual([
      {
        request_id: requestId,
        feature_key: 'chat',
        route_mode: 'platform',
        provider: 'mock',
        model: 'echo',
        input_tokens: inputTokens,
        output_tokens: outputTokens,
        estimated: false,
        retail_usd: formatUsd(rated.retailUsd),
        upstream_cost_usd: formatUsd(rated.upstreamCostUsd),
      },
    ]);
    // The charge left the wallet and the hold no longer counts.
    const after = await wallet(testEnv, session.walletId);
    expect(after.held).toBe('0.00000000');
    expect(after.balance).toBe(formatUsd(subtractUsd(parseWireAmount('1.00000000'), rated.retailUsd)));
  });

  it('passes OpenAI fields through to an OpenAI upstream with the platform pool key, and takes its token counts', async () => {
    const upstream = fakeUpstream(() =>
      jsonResponse(openAiCompletion('Paris.', { prompt_tokens: 14, completion_tokens: 2, total_tokens: 16 })),
    );
    const session = await fundedSession(testEnv);
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'openai:gpt-4o-mini',
      feature: 'chat',
      messages: [userMessage('Capital of France?')],
      temperature: 0.2,
      seed: 7,
      response_format: { type: 'text' },
      logit_bias: { '50256': -100 },
      max_tokens: 20,
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as CompletionBody;
    expect(body.choices[0]?.message.content).toBe('Paris.');
    expect(body.faucet).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini', input_tokens: 14, output_tokens: 2, estimated: false });

    expect(upstream.requests).toHaveLength(1);
    const [sent] = upstream.requests;
    expect(sent?.url).toBe('https://api.openai.com/v1/chat/completions');
    expect(sent?.headers.authorization).toBe('Bearer sk-platform-pool-test');
    expect(sent?.body).toEqual({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Capital of France?' }],
      temperature: 0.2,
      seed: 7,
      response_format: { type: 'text' },
      logit_bias: { '50256': -100 },
      max_tokens: 20,
      // Its first quota covers its 20 output tokens: held for them, answered whole by the provider.
      stream: false,
    });
  });

  it('bills upper bounds, and says so, when the upstream reports no usage (CJK and emoji never under-billed)', async () => {
    const answer = '四つの言葉 🎉🎉';
    const completion = { ...openAiCompletion(answer), usage: undefined };
    const upstream = fakeUpstream(() => jsonResponse(completion));
    const session = await fundedSession(testEnv);
    const messages = [userMessage('四つの言葉を言って 🙏')];
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'openai:gpt-4o-mini',
      feature: 'chat',
      messages,
    });
    const body = (await response.json()) as CompletionBody;
    expect(body.faucet).toMatchObject({
      estimated: true,
      output_tokens: new TextEncoder().encode(answer).byteLength,
    });
    // The old estimator counted far fewer tokens than a provider bills for CJK and emoji.
    expect(body.faucet.output_tokens).toBeGreaterThan(countTokens(answer) * 2);
    expect(body.faucet.input_tokens).toBeGreaterThanOrEqual(new TextEncoder().encode('四つの言葉を言って 🙏').byteLength);
    expect(body.faucet.input_tokens).toBeGreaterThanOrEqual(countPromptTokens(messages) * 2);
    await settled(testEnv);
    const [row] = await usageRows(testEnv, body.faucet.request_id);
    expect(row?.estimated).toBe(true);
  });

  it('calls Anthropic models through the Messages API and answers in OpenAI shape', async () => {
    const upstream = fakeUpstream(() =>
      jsonResponse({
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude-haiku-4-5',
        content: [{ type: 'text', text: 'Bonjour.' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 9, output_tokens: 3 },
      }),
    );
    const session = await fundedSession(testEnv);
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'anthropic:claude-haiku-4-5',
      feature: 'chat',
      max_tokens: 50,
      messages: [{ role: 'system', content: 'Answer in French.' }, userMessage('Hello')],
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as CompletionBody & { choices: Array<{ finish_reason: string }> };
    expect(body.choices[0]).toMatchObject({ message: { content: 'Bonjour.' }, finish_reason: 'stop' });
    expect(body.faucet).toMatchObject({ provider: 'anthropic', model: 'claude-haiku-4-5', input_tokens: 9, output_tokens: 3 });
    expect(upstream.requests[0]?.url).toBe('https://api.anthropic.com/v1/messages');
    expect(upstream.requests[0]?.headers['x-api-key']).toBe('sk-ant-platform-pool-test');
    expect(upstream.requests[0]?.body).toMatchObject({ system: 'Answer in French.', max_tokens: 50 });
  });
});
