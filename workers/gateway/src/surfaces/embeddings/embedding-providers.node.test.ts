import { describe, expect, it } from 'vitest';
import { FaucetError } from '#shared/wire/errors.ts';
import { parseModel } from '../../routing/parse-model.ts';
import { embeddingInputTokenBound } from './embedding-bounds.ts';
import { float32Base64, float32FromBase64 } from './embedding-encoding.ts';
import { createEmbeddings, type EmbeddingContext } from './embedding-providers.ts';
import { embeddingRequestFor, readEmbeddingsBody } from './embeddings-request.ts';

/** A fake upstream: answers every request with `answer`, and keeps what it was sent. */
function fakeUpstream(answer: unknown, status = 200) {
  const calls: Array<{ url: string; headers: Headers; body: Record<string, unknown> }> = [];
  const context: EmbeddingContext = {
    upstreamTimeoutMs: 5_000,
    mockLatencyMs: 0,
    fetch: async (request) => {
      calls.push({ url: request.url, headers: request.headers, body: (await request.json()) as Record<string, unknown> });
      return new Response(JSON.stringify(answer), { status, headers: { 'content-type': 'application/json' } });
    },
  };
  return { context, calls };
}

const key = 'sk-test-not-a-real-key';

function call(name: string, fields: Record<string, unknown>, baseUrl: string) {
  const body = readEmbeddingsBody({ model: name, ...fields });
  const reference = parseModel(body.model);
  return { reference, call: { request: embeddingRequestFor(reference, body), credential: { apiKey: key, baseUrl }, callId: 'call-1' } };
}

/** An OpenAI embeddings answer; `usage` null: one without usage (as Together's). */
const openAiAnswer = (vectors: Array<number[] | string>, usage: unknown = { prompt_tokens: 5, total_tokens: 5 }) => ({
  object: 'list',
  data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })),
  model: 'text-embedding-3-small',
  ...(usage === null ? {} : { usage }),
});

// Values a float32 holds exactly, so floats and base64 compare without rounding.
const vector = [0.5, -0.25, 0.125, 1];

async function refusal(promise: Promise<unknown>): Promise<FaucetError> {
  const error = await promise.then(
    () => new Error('was not refused'),
    (caught: unknown) => caught,
  );
  if (!FaucetError.isInstance(error)) throw error;
  return error;
}

describe('OpenAI embeddings', () => {
  it('sends one POST to {root}/embeddings with the key, the call id and the fields OpenAI takes, asking for base64', async () => {
    const { context, calls } = fakeUpstream(openAiAnswer([float32Base64(vector), float32Base64(vector)]));
    const { reference, call: embeddingCall } = call(
      'openai:text-embedding-3-small',
      { input: ['a', 'b'], dimensions: 4, encoding_format: 'float', user: 'end-user-1' },
      'https://api.openai.com/v1',
    );
    await createEmbeddings(context, reference, embeddingCall);
    expect(calls).toHaveLength(1);
    const [sent] = calls;
    expect(sent?.url).toBe('https://api.openai.com/v1/embeddings');
    expect(sent?.headers.get('authorization')).toBe(`Bearer ${key}`);
    expect(sent?.headers.get('x-client-request-id')).toBe('call-1');
    expect(sent?.body).toEqual({
      model: 'text-embedding-3-small',
      input: ['a', 'b'],
      dimensions: 4,
      encoding_format: 'base64',
      user: 'end-user-1',
    });
  });

  it('answers OpenAI’s list of floats decoded from its base64, with the provider’s usage, not estimated', async () => {
    const { context } = fakeUpstream(openAiAnswer([float32Base64(vector)], { prompt_tokens: 7, total_tokens: 7 }));
    const { reference, call: embeddingCall } = call('openai:text-embedding-3-small', { input: 'hello' }, 'https://api.openai.com/v1');
    const answer = await createEmbeddings(context, reference, embeddingCall);
    expect(answer.response).toEqual({
      object: 'list',
      data: [{ object: 'embedding', index: 0, embedding: vector }],
      model: 'text-embedding-3-small',
      usage: { prompt_tokens: 7, total_tokens: 7 },
    });
    expect(answer.usage).toEqual({ tokens: expect.objectContaining({ input: 7, output: 0 }), estimated: false });
  });

  it('reads a full batch’s answer, larger than a completion may be', async () => {
    const full = float32Base64(Array.from({ length: 1536 }, (_, index) => index / 1536));
    const inputs = Array.from({ length: 2048 }, (_, index) => `text ${index}`);
    const { context, calls } = fakeUpstream(openAiAnswer(inputs.map(() => full)));
    const { reference, call: embeddingCall } = call(
      'openai:text-embedding-3-small',
      { input: inputs, encoding_format: 'base64' },
      'https://api.openai.com/v1',
    );
    const answer = await createEmbeddings(context, reference, embeddingCall);
    expect(calls).toHaveLength(1);
    expect(answer.response.data).toHaveLength(2048);
    expect(answer.response.data[2047]?.embedding).toBe(full);
  });

  it('sends token arrays as they are', async () => {
    const { context, calls } = fakeUpstream(openAiAnswer([vector, vector]));
    const { reference, call: embeddingCall } = call('openai:text-embedding-3-large', { input: [[1, 2], [3]] }, 'https://api.openai.com/v1');
    await createEmbeddings(context, reference, embeddingCall);
    expect(calls[0]?.body.input).toEqual([[1, 2], [3]]);
  });

  it('asks OpenAI for base64 and passes its base64 through', async () => {
    const encoded = float32Base64(vector);
    const { context, calls } = fakeUpstream(openAiAnswer([encoded]));
    const { reference, call: embeddingCall } = call(
      'openai:text-embedding-3-small',
      { input: 'x', encoding_format: 'base64' },
      'https://api.openai.com/v1',
    );
    const answer = await createEmbeddings(context, reference, embeddingCall);
    expect(calls[0]?.body.encoding_format).toBe('base64');
    expect(answer.response.data[0]?.embedding).toBe(encoded);
  });

  it('puts the vectors in input order whatever order the upstream lists them in', async () => {
    const answer = openAiAnswer([[1], [2], [3]]);
    answer.data.reverse();
    const { context, calls } = fakeUpstream(answer);
    const { reference, call: embeddingCall } = call(
      'openai:text-embedding-3-small',
      { input: ['a', 'b', 'c'] },
      'https://api.openai.com/v1',
    );
    const result = await createEmbeddings(context, reference, embeddingCall);
    expect(calls).toHaveLength(1);
    expect(result.response.data.map((item) => [item.index, item.embedding])).toEqual([
      [0, [1]],
      [1, [2]],
      [2, [3]],
    ]);
  });
});

describe('Azure OpenAI embeddings', () => {
  it('go to the deployment’s URL with the catalog’s api-version and the api-key header', async () => {
    const { context, calls } = fakeUpstream(openAiAnswer([vector]));
    const { reference, call: embeddingCall } = call(
      'azure:text-embedding-3-small',
      { input: 'x', encoding_format: 'base64' },
      'https://faucet-test.openai.azure.com/openai',
    );
    await createEmbeddings(context, reference, embeddingCall);
    expect(calls[0]?.url).toBe(
      'https://faucet-test.openai.azure.com/openai/deployments/text-embedding-3-small/embeddings?api-version=2024-10-21',
    );
    expect(calls[0]?.headers.get('api-key')).toBe(key);
    expect(calls[0]?.headers.get('authorization')).toBeNull();
    expect(calls[0]?.headers.get('x-client-request-id')).toBeNull();
  });

  it('keep an api-version the credential’s root names', async () => {
    const { context, calls } = fakeUpstream(openAiAnswer([vector]));
    const { reference, call: embeddingCall } = call(
      'azure:text-embedding-3-small',
      { input: 'x' },
      'https://faucet-test.openai.azure.com/openai?api-version=2025-01-01-preview',
    );
    await createEmbeddings(context, reference, embeddingCall);
    expect(calls[0]?.url).toBe(
      'https://faucet-test.openai.azure.com/openai/deployments/text-embedding-3-small/embeddings?api-version=2025-01-01-preview',
    );
  });
});

describe('OpenAI-compatible providers that take text only', () => {
  it.each([
    ['mistral:mistral-embed', 'https://api.mistral.ai/v1', 'https://api.mistral.ai/v1/embeddings'],
    ['together:BAAI/bge-base-en-v1.5', 'https://api.together.xyz/v1', 'https://api.together.xyz/v1/embeddings'],
    [
      'fireworks:nomic-ai/nomic-embed-text-v1.5',
      'https://api.fireworks.ai/inference/v1',
      'https://api.fireworks.ai/inference/v1/embeddings',
    ],
  ])('%s is sent model and input alone, and its floats are encoded as base64 by Faucet', async (name, baseUrl, url) => {
    const { context, calls } = fakeUpstream(openAiAnswer([vector]));
    const { reference, call: embeddingCall } = call(name, { input: 'x', encoding_format: 'base64', user: 'end-user-1' }, baseUrl);
    const answer = await createEmbeddings(context, reference, embeddingCall);
    expect(calls[0]?.url).toBe(url);
    expect(calls[0]?.headers.get('authorization')).toBe(`Bearer ${key}`);
    expect(calls[0]?.body).toEqual({ model: reference.model, input: ['x'] });
    const embedding = answer.response.data[0]?.embedding;
    expect(typeof embedding).toBe('string');
    expect(float32FromBase64(embedding as string)).toEqual(vector);
  });

  it('bill the input bound, marked estimated, when the upstream reports no usage', async () => {
    const { context } = fakeUpstream(openAiAnswer([vector, vector], null));
    const { reference, call: embeddingCall } = call(
      'together:BAAI/bge-base-en-v1.5',
      { input: ['héllo', 'x'] },
      'https://api.together.xyz/v1',
    );
    const answer = await createEmbeddings(context, reference, embeddingCall);
    const bound = embeddingInputTokenBound({ kind: 'text', texts: ['héllo', 'x'] });
    expect(answer.usage).toEqual({ tokens: expect.objectContaining({ input: bound, output: 0 }), estimated: true });
    expect(answer.response.usage).toEqual({ prompt_tokens: bound, total_tokens: bound });
  });
});

describe('Google embeddings', () => {
  const geminiRoot = 'https://generativelanguage.googleapis.com/v1beta';

  it('send every input in one batchEmbedContents call with outputDimensionality', async () => {
    const { context, calls } = fakeUpstream({ embeddings: [{ values: vector }, { values: vector }] });
    const { reference, call: embeddingCall } = call('google:gemini-embedding-001', { input: ['a', 'b'], dimensions: 4 }, geminiRoot);
    await createEmbeddings(context, reference, embeddingCall);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.url).toBe(`${geminiRoot}/models/gemini-embedding-001:batchEmbedContents`);
    expect(calls[0]?.headers.get('x-goog-api-key')).toBe(key);
    expect(calls[0]?.headers.get('authorization')).toBeNull();
    expect(calls[0]?.body).toEqual({
      requests: [
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'a' }] }, outputDimensionality: 4 },
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'b' }] }, outputDimensionality: 4 },
      ],
    });
  });

  it('answer OpenAI’s list, billed at the input bound and marked estimated, as Google reports no usage', async () => {
    const { context } = fakeUpstream({ embeddings: [{ values: vector }] });
    const { reference, call: embeddingCall } = call('google:gemini-embedding-001', { input: 'hello' }, geminiRoot);
    const answer = await createEmbeddings(context, reference, embeddingCall);
    const bound = embeddingInputTokenBound({ kind: 'text', texts: ['hello'] });
    expect(answer.response).toEqual({
      object: 'list',
      data: [{ object: 'embedding', index: 0, embedding: vector }],
      model: 'gemini-embedding-001',
      usage: { prompt_tokens: bound, total_tokens: bound },
    });
    expect(answer.usage.estimated).toBe(true);
  });

  it('take Google’s count where it reports one', async () => {
    const { context } = fakeUpstream({ embeddings: [{ values: vector }], usageMetadata: { promptTokenCount: 3 } });
    const { reference, call: embeddingCall } = call('google:gemini-embedding-001', { input: 'hello' }, geminiRoot);
    const answer = await createEmbeddings(context, reference, embeddingCall);
    expect(answer.usage).toEqual({ tokens: expect.objectContaining({ input: 3 }), estimated: false });
  });

  it('encode Google’s floats as base64 when asked', async () => {
    const { context } = fakeUpstream({ embeddings: [{ values: vector }] });
    const { reference, call: embeddingCall } = call('google:gemini-embedding-001', { input: 'x', encoding_format: 'base64' }, geminiRoot);
    const answer = await createEmbeddings(context, reference, embeddingCall);
    expect(answer.response.data[0]?.embedding).toBe(float32Base64(vector));
  });
});

describe('an upstream that fails or answers wrongly', () => {
  it('refuses as the client’s mistake what the upstream refused as one, with its reason', async () => {
    const { context } = fakeUpstream({ error: { message: 'This model does not exist.' } }, 404);
    const { reference, call: embeddingCall } = call('openai:text-embedding-3-small', { input: 'x' }, 'https://api.openai.com/v1');
    const error = await refusal(createEmbeddings(context, reference, embeddingCall));
    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain('This model does not exist.');
  });

  it('is an upstream error when it answers fewer vectors than inputs, or other dimensions than asked', async () => {
    const short = fakeUpstream(openAiAnswer([vector]));
    const two = call('openai:text-embedding-3-small', { input: ['a', 'b'] }, 'https://api.openai.com/v1');
    expect(await refusal(createEmbeddings(short.context, two.reference, two.call))).toMatchObject({
      code: 'upstream_error',
      message: 'The upstream provider answered 1 embeddings for 2 inputs.',
    });
    const long = fakeUpstream({ embeddings: [{ values: [...vector, 0] }] });
    const four = call('google:gemini-embedding-001', { input: 'a', dimensions: 4 }, 'https://generativelanguage.googleapis.com/v1beta');
    expect(await refusal(createEmbeddings(long.context, four.reference, four.call))).toMatchObject({
      code: 'upstream_error',
      message: 'Google answered 5 dimensions where 4 were asked.',
    });
  });

  it('is refused before any request when the root is not a public address', async () => {
    const { context, calls } = fakeUpstream(openAiAnswer([vector]));
    const { reference, call: embeddingCall } = call('openai:text-embedding-3-small', { input: 'x' }, 'http://127.0.0.1:9/v1');
    expect((await refusal(createEmbeddings(context, reference, embeddingCall))).code).toBe('upstream_error');
    expect(calls).toHaveLength(0);
  });
});

describe('the mock provider', () => {
  it('answers without a key or the network', async () => {
    const { context, calls } = fakeUpstream({});
    const { reference, call: embeddingCall } = call('mock:echo', { input: ['a', 'b'], dimensions: 8 }, 'mock://local');
    const answer = await createEmbeddings(context, reference, { ...embeddingCall, credential: { apiKey: null, baseUrl: 'mock://local' } });
    expect(calls).toHaveLength(0);
    expect(answer.response.data.map((item) => (item.embedding as number[]).length)).toEqual([8, 8]);
  });
});
