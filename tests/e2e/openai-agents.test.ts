/**
 * The OpenAI Agents SDK (`@openai/agents`) against the running local stack, configured as a developer
 * would: an `openai` client on the gateway with the session token as its API key, the Responses API,
 * tracing off (nothing goes to OpenAI), no Faucet field at all (the app's default feature applies).
 * `mock:tools` drives one round of function calling (providers/mock/mock-adapter.ts): the model calls
 * the agent's tool, the SDK runs it and sends its output back, the model answers; each of the two
 * calls is billed, which the answers' `faucet` objects and the user's usage receipts both show.
 */
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import type { FaucetObject } from '../../workers/gateway/src/metering/faucet-object.ts';
import { fundedSession, usageRecord } from './funded-session.ts';

const stack = inject('stack');

let token: string;

beforeAll(async () => {
  setTracingDisabled(true);
  token = await fundedSession(stack);
});

/** A runner on the gateway, and the request bodies the SDK sent through it. */
function gatewayRunner(): { runner: Runner; sent: Array<Record<string, unknown>> } {
  const sent: Array<Record<string, unknown>> = [];
  const openAIClient = new OpenAI({
    baseURL: `${stack.gatewayUrl}/v1`,
    apiKey: token,
    maxRetries: 0,
    fetch: async (url, init) => {
      if (typeof init?.body === 'string') sent.push(JSON.parse(init.body) as Record<string, unknown>);
      return fetch(url, init);
    },
  });
  const modelProvider = new OpenAIProvider({ openAIClient, useResponses: true });
  return { runner: new Runner({ modelProvider, tracingDisabled: true }), sent };
}

/** An agent on `mock:tools` with one strict function tool; the cities the tool was asked about go to `asked`. */
function weatherAgent(asked: string[] = []): Agent {
  const getWeather = tool({
    name: 'get_weather',
    description: 'The weather in a city today.',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      asked.push(city);
      return `18 degrees and sunny in ${city}`;
    },
  });
  return new Agent({ name: 'Weather agent', instructions: 'Answer with the weather tool.', model: 'mock:tools', tools: [getWeather] });
}

describe('the OpenAI Agents SDK on the Responses API', () => {
  it('runs an agent whose model calls a strict function tool, and bills both model calls', async () => {
    const asked: string[] = [];
    const agent = weatherAgent(asked);
    const { runner, sent } = gatewayRunner();

    const result = await runner.run(agent, 'What is the weather in Paris?');

    expect(asked).toEqual(['Paris']);
    expect(result.finalOutput).toBe('Tool result: 18 degrees and sunny in Paris');
    expect(result.newItems.map((item) => item.type)).toEqual(['tool_call_item', 'tool_call_output_item', 'message_output_item']);

    // What the SDK sent: not streamed, its instructions, `include: []`, a strict function tool, no Faucet field.
    expect(sent).toHaveLength(2);
    for (const body of sent) {
      expect(body).toMatchObject({ model: 'mock:tools', instructions: 'Answer with the weather tool.', include: [], stream: false });
      expect(body).not.toHaveProperty('feature');
      expect(body.tools).toEqual([
        expect.objectContaining({
          type: 'function',
          name: 'get_weather',
          strict: true,
          parameters: expect.objectContaining({ required: ['city'], additionalProperties: false }),
        }),
      ]);
    }
    const [call, output] = ((sent[1]?.input ?? []) as Array<Record<string, unknown>>).slice(-2);
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}' });
    expect(output).toMatchObject({ type: 'function_call_output', call_id: call?.call_id });

    // Each model call answered with its `faucet` object, and the user's usage shows it charged.
    expect(result.rawResponses).toHaveLength(2);
    const faucets = result.rawResponses.map((response) => (response.providerData as { faucet?: FaucetObject }).faucet);
    for (const [index, faucet] of faucets.entries()) {
      expect(faucet).toMatchObject({
        feature: stack.featureKey,
        route_mode: 'platform',
        provider: 'mock',
        model: 'tools',
        estimated: false,
      });
      expect(faucet?.input_tokens).toBe(result.rawResponses[index]?.usage.inputTokens);
      expect(faucet?.output_tokens).toBe(result.rawResponses[index]?.usage.outputTokens);
      expect(faucet?.charge.amount_usd).toMatch(/^\d+\.\d{8}$/);
      expect(Number(faucet?.charge.amount_usd)).toBeGreaterThan(0);
      expect(await usageRecord(stack, token, faucet?.request_id ?? '')).toMatchObject({
        request_id: faucet?.request_id,
        provider: 'mock',
        model: 'tools',
        route_mode: 'platform',
        output_tokens: faucet?.output_tokens,
        charged_usd: faucet?.charge.amount_usd,
      });
    }
    expect(new Set(faucets.map((faucet) => faucet?.request_id)).size).toBe(2);
  });

  it('runs the same agent streamed, each call billed in its last event', async () => {
    const agent = weatherAgent();
    const { runner, sent } = gatewayRunner();

    const result = await runner.run(agent, 'What is the weather in Lyon?', { stream: true });
    let text = '';
    const finished: Array<{ faucet?: FaucetObject; outputTokens: number }> = [];
    for await (const event of result) {
      if (event.type !== 'raw_model_stream_event') continue;
      if (event.data.type === 'output_text_delta') text += event.data.delta;
      // A streamed run keeps the answer's extra fields only on the model's own `response_done` event.
      if (event.data.type === 'response_done') {
        const faucet = (event.data.response.providerData as { faucet?: FaucetObject } | undefined)?.faucet;
        finished.push({ faucet, outputTokens: event.data.response.usage.outputTokens });
      }
    }
    await result.completed;

    expect(sent.map((body) => body.stream)).toEqual([true, true]);
    expect(text).toBe('Tool result: 18 degrees and sunny in Lyon');
    expect(result.finalOutput).toBe(text);
    expect(result.newItems.map((item) => item.type)).toEqual(['tool_call_item', 'tool_call_output_item', 'message_output_item']);
    expect(finished).toHaveLength(2);
    for (const { faucet, outputTokens } of finished) {
      expect(faucet).toMatchObject({ route_mode: 'platform', provider: 'mock', model: 'tools', output_tokens: outputTokens });
      expect(await usageRecord(stack, token, faucet?.request_id ?? '')).toMatchObject({ charged_usd: faucet?.charge.amount_usd });
    }
  });
});
