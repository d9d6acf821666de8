/**
 * The clients developers will point at Faucet, against the running local stack: the official
 * `openai` package and the Vercel AI SDK's OpenAI-compatible provider, with the session token as
 * API key and `feature` as an extra body field, calling `mock:echo` (no network).
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import type { FaucetObject } from '../../workers/gateway/src/metering/faucet-object.ts';

const stack = inject('stack');

let token: string;

async function json<T>(response: Response): Promise<T> {
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

beforeAll(async () => {
  const session = await json<{ session_token: string }>(
    await fetch(`${stack.apiUrl}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.developerKey}` },
      body: JSON.stringify({ public_app_id: stack.publicAppId, external_user_id: `e2e-${crypto.randomUUID()}` }),
    }),
  );
  token = session.session_token;
  const wallet = await json<{ wallet_id: string }>(
    await fetch(`${stack.apiUrl}/v1/user/wallet`, { headers: { authorization: `Bearer ${token}` } }),
  );
  await json(
    await fetch(`${stack.apiUrl}/v1/admin/wallets/${wallet.wallet_id}/credit-test-balance`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.adminToken}` },
      body: JSON.stringify({ amount_usd: '1.00000000' }),
    }),
  );
});

/** Faucet's extra body field, which the openai package sends as given but does not declare. */
function feature(key: string): Record<string, never> {
  return { feature: key } as unknown as Record<string, never>;
}

function expectFaucet(faucet: FaucetObject | undefined): void {
  expect(faucet).toMatchObject({ route_mode: 'platform', provider: 'mock', model: 'echo', estimated: false, charge: { currency: 'USD' } });
  expect(faucet?.charge.amount_usd).toMatch(/^\d+\.\d{8}$/);
  expect(Number(faucet?.charge.amount_usd)).toBeGreaterThan(0);
  expect(faucet?.output_tokens).toBeGreaterThan(0);
}

describe('the official openai package', () => {
  const client = () => new OpenAI({ baseURL: `${stack.gatewayUrl}/v1`, apiKey: token, maxRetries: 0 });

  it('completes a non-streaming call', async () => {
    const completion = await client().chat.completions.create({
      model: 'mock:echo',
      messages: [{ role: 'user', content: 'Hello from the openai package' }],
      ...feature('chat'),
    });
    expect(completion.choices[0]?.message.content).toBe('Echo: Hello from the openai package');
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
    expectFaucet((completion as unknown as { faucet: FaucetObject }).faucet);
  });

  it('completes a streaming call, the faucet object arriving last', async () => {
    const stream = await client().chat.completions.create({
      model: 'mock:echo',
      messages: [{ role: 'user', content: 'Stream this back' }],
      stream: true,
      stream_options: { include_usage: true },
      ...feature('chat'),
    });
    let text = '';
    const events: unknown[] = [];
    for await (const chunk of stream) {
      events.push(chunk);
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    expect(text).toBe('Echo: Stream this back');
    const last = events.at(-1) as { object: string; faucet: FaucetObject };
    expect(last.object).toBe('faucet.usage');
    expectFaucet(last.faucet);
    const usageChunk = events.at(-2) as { usage: { completion_tokens: number } };
    expect(usageChunk.usage.completion_tokens).toBe(last.faucet.output_tokens);
  });

  it('surfaces a refused call as an APIError carrying the envelope', async () => {
    const failure = await client()
      .chat.completions.create({
        model: 'mock:echo',
        messages: [{ role: 'user', content: 'hi' }],
        ...feature('no-such-feature'),
      })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
  });
});

describe('the Vercel AI SDK through @ai-sdk/openai-compatible', () => {
  const faucetProvider = () => {
    const seen: { faucet?: FaucetObject } = {};
    const provider = createOpenAICompatible({
      name: 'faucet',
      baseURL: `${stack.gatewayUrl}/v1`,
      apiKey: token,
      includeUsage: true,
      // Hands the `faucet` object of a completion or of the stream's last event to the caller.
      metadataExtractor: {
        extractMetadata: async ({ parsedBody }) => {
          seen.faucet = (parsedBody as { faucet?: FaucetObject }).faucet;
          return undefined;
        },
        createStreamExtractor: () => ({
          processChunk: (chunk) => {
            const faucet = (chunk as { faucet?: FaucetObject }).faucet;
            if (faucet) seen.faucet = faucet;
          },
          buildMetadata: () => undefined,
        }),
      },
    });
    return { provider, seen };
  };

  it('generates text', async () => {
    const { provider, seen } = faucetProvider();
    const result = await generateText({
      model: provider('mock:echo'),
      prompt: 'Hello from the AI SDK',
      providerOptions: { faucet: { feature: 'chat' } },
      maxRetries: 0,
    });
    expect(result.text).toBe('Echo: Hello from the AI SDK');
    expect(result.usage.outputTokens).toBeGreaterThan(0);
    expectFaucet(seen.faucet);
  });

  it('streams text', async () => {
    const { provider, seen } = faucetProvider();
    const errors: unknown[] = [];
    const result = streamText({
      model: provider('mock:echo'),
      prompt: 'Stream from the AI SDK',
      providerOptions: { faucet: { feature: 'chat' } },
      maxRetries: 0,
      onError: ({ error }) => void errors.push(error),
    });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    expect(errors).toEqual([]);
    expect(text).toBe('Echo: Stream from the AI SDK');
    expect((await result.usage).outputTokens).toBe(seen.faucet?.output_tokens);
    expectFaucet(seen.faucet);
  });
});
