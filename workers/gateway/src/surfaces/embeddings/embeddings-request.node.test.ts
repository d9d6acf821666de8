import { describe, expect, it } from 'vitest';
import { FaucetError } from '#shared/wire/errors.ts';
import { parseModel } from '../../routing/parse-model.ts';
import { maxEmbeddingInputTokenBound } from './embedding-bounds.ts';
import { embeddingRequestFor, readEmbeddingsBody } from './embeddings-request.ts';

/** The 400 a body or request is refused with: its message, which must name the field. */
function refusal(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    if (!FaucetError.isInstance(error)) throw error;
    expect(error.code).toBe('invalid_request');
    expect(error.status).toBe(400);
    return error.message;
  }
  throw new Error('was not refused');
}

const body = (fields: Record<string, unknown>) => readEmbeddingsBody({ model: 'openai:text-embedding-3-small', input: 'hi', ...fields });
const requestFor = (fields: Record<string, unknown>) => {
  const parsed = body(fields);
  return embeddingRequestFor(parseModel(parsed.model), parsed);
};

describe('the embeddings body', () => {
  it('accepts each of OpenAI input forms and normalizes them to texts or token arrays', () => {
    expect(requestFor({ input: 'hello' }).input).toEqual({ kind: 'text', texts: ['hello'] });
    expect(requestFor({ input: ['a', 'b'] }).input).toEqual({ kind: 'text', texts: ['a', 'b'] });
    expect(requestFor({ input: [1, 2, 3] }).input).toEqual({ kind: 'tokens', tokens: [[1, 2, 3]] });
    expect(requestFor({ input: [[1], [2, 3]] }).input).toEqual({ kind: 'tokens', tokens: [[1], [2, 3]] });
  });

  it('defaults to floats, the model’s own length and no user', () => {
    expect(requestFor({})).toEqual({
      model: 'text-embedding-3-small',
      input: { kind: 'text', texts: ['hi'] },
      dimensions: null,
      encodingFormat: 'float',
      user: null,
    });
    expect(requestFor({ encoding_format: 'base64', dimensions: 256, user: 'u-1' })).toMatchObject({
      dimensions: 256,
      encodingFormat: 'base64',
      user: 'u-1',
    });
  });

  it('takes a bare model name with a default provider, and Faucet’s feature and route_mode', () => {
    const parsed = readEmbeddingsBody({ model: 'mistral-embed', input: 'x', feature: 'search', route_mode: 'platform' });
    expect(parseModel(parsed.model)).toMatchObject({ provider: 'mistral', model: 'mistral-embed' });
    expect(parsed).toMatchObject({ feature: 'search', route_mode: 'platform' });
  });

  it.each([
    ['an empty string', '', 'input: must not be an empty string'],
    ['an empty array', [], 'input: must not be an empty array'],
    ['an empty string in an array', ['a', ''], 'input.1: must not be an empty string'],
    ['an empty token array', [[1], []], 'input.1: must not be an empty token array'],
    ['a negative token id', [1, -2], 'input.1: token ids are integers from 0 to 2147483647'],
    ['a fractional token id', [[1], [2, 2.5]], 'input: item 1[1]: token ids are integers'],
    ['token ids mixed with strings', [1, 'a'], 'input: item 1: token ids are integers from 0 to 2147483647, and an input is all strings'],
    ['strings mixed with token ids', ['a', 1], 'input: must be a non-empty string, an array of non-empty strings'],
    ['an object', { text: 'a' }, 'input: must be a non-empty string'],
    ['more than 2048 strings', Array.from({ length: 2049 }, () => 'a'), 'input: at most 2048 inputs in one request'],
    ['more than 2048 token arrays', Array.from({ length: 2049 }, () => [1]), 'input: at most 2048 inputs in one request'],
  ])('refuses %s as input, naming the field', (_name, input, message) => {
    expect(refusal(() => body({ input }))).toContain(message);
  });

  it('refuses an input larger than one request may hold', () => {
    const large = 'a'.repeat(100_000);
    const input = Array.from({ length: Math.ceil(maxEmbeddingInputTokenBound / large.length) + 1 }, () => large);
    expect(refusal(() => body({ input }))).toMatch(/^Invalid request: input: is too large: it may count up to \d+ tokens/);
    const tokens = Array.from({ length: maxEmbeddingInputTokenBound + 1 }, () => 7);
    expect(refusal(() => body({ input: tokens }))).toContain('input: is too large');
  });

  it.each([
    ['dimensions', { dimensions: 0 }, 'dimensions:'],
    ['dimensions', { dimensions: 1.5 }, 'dimensions:'],
    ['dimensions', { dimensions: '256' }, 'dimensions:'],
    ['encoding_format', { encoding_format: 'float16' }, 'encoding_format: must be "float" or "base64"'],
    ['user', { user: 42 }, 'user:'],
    ['model', { model: 'openai: spaced' }, 'model:'],
    ['an unknown field', { input_type: 'query' }, 'field "input_type" is not accepted'],
  ])('refuses a bad %s', (_name, fields, message) => {
    expect(refusal(() => body(fields))).toContain(message);
  });
});

describe('what a model’s provider cannot do', () => {
  it('is refused before any hold: dimensions for a model that cannot shorten its vectors', () => {
    expect(refusal(() => requestFor({ model: 'openai:text-embedding-ada-002', dimensions: 512 }))).toBe(
      'dimensions: model "openai:text-embedding-ada-002" cannot shorten its vectors; leave dimensions out.',
    );
    expect(refusal(() => requestFor({ model: 'mistral:mistral-embed', dimensions: 512 }))).toContain('dimensions:');
  });

  it('refuses more dimensions than the model makes, and takes up to that', () => {
    expect(refusal(() => requestFor({ dimensions: 1537 }))).toBe('dimensions: at most 1536 for model "openai:text-embedding-3-small".');
    expect(requestFor({ dimensions: 1536 }).dimensions).toBe(1536);
    expect(requestFor({ model: 'azure:text-embedding-3-large', dimensions: 3072 }).dimensions).toBe(3072);
    expect(requestFor({ model: 'google:gemini-embedding-001', dimensions: 768 }).dimensions).toBe(768);
    expect(refusal(() => requestFor({ model: 'google:text-embedding-004', dimensions: 1024 }))).toContain('at most 768');
  });

  it('refuses token arrays where the provider takes text only', () => {
    for (const model of ['google:gemini-embedding-001', 'mistral:mistral-embed', 'together:some-embed', 'fireworks:nomic-embed']) {
      expect(refusal(() => requestFor({ model, input: [[1, 2]] }))).toMatch(
        /^input: token arrays are accepted for openai, azure models only/,
      );
    }
    expect(requestFor({ model: 'azure:text-embedding-3-small', input: [[1, 2]] }).input.kind).toBe('tokens');
  });

  it('refuses more inputs than one upstream call takes, never splitting a batch', () => {
    const texts = Array.from({ length: 101 }, (_, index) => `text ${index}`);
    expect(refusal(() => requestFor({ model: 'google:gemini-embedding-001', input: texts }))).toContain(
      'input: google models take at most 100 inputs in one call (this request has 101)',
    );
    expect(requestFor({ model: 'google:gemini-embedding-001', input: texts.slice(0, 100) }).input).toMatchObject({ kind: 'text' });
  });

  it('refuses providers that serve no embeddings, chat models, and mock models that do not exist', () => {
    expect(refusal(() => requestFor({ model: 'anthropic:claude-haiku-4-5' }))).toMatch(/^model: provider "anthropic" serves no embeddings/);
    expect(refusal(() => requestFor({ model: 'openai:gpt-4o-mini' }))).toBe('model: "openai:gpt-4o-mini" is not an embedding model.');
    expect(refusal(() => requestFor({ model: 'mock:nothing' }))).toContain('model: the mock provider has no embedding model "nothing"');
    expect(requestFor({ model: 'mock:echo', dimensions: 3 }).dimensions).toBe(3);
  });
});
