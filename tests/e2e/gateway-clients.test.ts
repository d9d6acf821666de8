/**
 * The clients developers will point at Faucet, against the running local stack: the official
 * `openai` package (chat completions, Responses, embeddings), the official `@anthropic-ai/sdk`
 * (Messages, as Claude Code speaks them) and the Vercel AI SDK's OpenAI-compatible provider, with the
 * session token as API key and `feature` as an extra body field, calling `mock:echo` (no network).
 */
import Anthropic from '@anthropic-ai/sdk';
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

describe('the official openai package on the Responses and embeddings APIs', () => {
  const client = () => new OpenAI({ baseURL: `${stack.gatewayUrl}/v1`, apiKey: token, maxRetries: 0 });

  it('creates a response', async () => {
    const response = await client().responses.create({ model: 'mock:echo', input: 'Hello from Responses', ...feature('chat') });
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Echo: Hello from Responses');
    expect(response.usage?.output_tokens).toBeGreaterThan(0);
    expectFaucet((response as unknown as { faucet: FaucetObject }).faucet);
  });

  it('streams a response to its final event', async () => {
    const stream = client().responses.stream({ model: 'mock:echo', input: 'Stream a response', ...feature('chat') });
    let text = '';
    stream.on('response.output_text.delta', (event) => {
      text += event.delta;
    });
    const final = await stream.finalResponse();
    expect(text).toBe('Echo: Stream a response');
    expect(final.output_text).toBe('Echo: Stream a response');
    expectFaucet((final as unknown as { faucet: FaucetObject }).faucet);
  });

  it('embeds a batch (the package asks for base64 and decodes it)', async () => {
    const answer = await client().embeddings.create({ model: 'mock:echo', input: ['one', 'two'], dimensions: 16, ...feature('chat') });
    expect(answer.data.map((item) => [item.index, item.embedding.length])).toEqual([
      [0, 16],
      [1, 16],
    ]);
    expect(answer.usage.prompt_tokens).toBeGreaterThan(0);
  });
});

describe('the official @anthropic-ai/sdk on the Messages API', () => {
  const messages = [{ role: 'user' as const, content: 'Hello from the Anthropic SDK' }];

  it('creates a message with the session token as its API key (x-api-key)', async () => {
    const client = new Anthropic({ baseURL: stack.gatewayUrl, apiKey: token, maxRetries: 0 });
    const message = await client.messages.create({ model: 'mock:echo', max_tokens: 100, messages, ...feature('chat') });
    expect(message.content).toEqual([{ type: 'text', text: 'Echo: Hello from the Anthropic SDK' }]);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expectFaucet((message as unknown as { faucet: FaucetObject }).faucet);
  });

  it('streams a message with the token as a bearer (Claude Code’s ANTHROPIC_AUTH_TOKEN)', async () => {
    const client = new Anthropic({ baseURL: stack.gatewayUrl, authToken: token, apiKey: null, maxRetries: 0 });
    const final = await client.messages.stream({ model: 'mock:echo', max_tokens: 100, messages, ...feature('chat') }).finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Echo: Hello from the Anthropic SDK' }]);
    expect(final.usage.output_tokens).toBeGreaterThan(0);
  });

  it('surfaces a refusal as the SDK’s own error, carrying Anthropic’s error type', async () => {
    const client = new Anthropic({ baseURL: stack.gatewayUrl, apiKey: token, maxRetries: 0 });
    const failure = await client.messages
      .create({ model: 'mock:echo', max_tokens: 100, messages, ...feature('no-such-feature') })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Anthropic.BadRequestError);
    expect((failure as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error' },
    });
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
