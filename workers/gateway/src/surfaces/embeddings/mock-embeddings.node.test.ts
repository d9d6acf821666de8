import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FaucetError } from '#shared/wire/errors.ts';
import { countTokens } from '../../tokens/tokenize.ts';
import { embeddingInputTokenBound } from './embedding-bounds.ts';
import { float32FromBase64 } from './embedding-encoding.ts';
import { mockDefaultDimensions } from './embedding-models.ts';
import type { EmbeddingInput, EmbeddingRequest } from './embeddings-request.ts';
import { mockEmbeddings } from './mock-embeddings.ts';

const request = (input: EmbeddingInput, fields: Partial<EmbeddingRequest> = {}): EmbeddingRequest => ({
  model: 'echo',
  input,
  dimensions: null,
  encodingFormat: 'float',
  user: null,
  ...fields,
});

const vectors = async (input: EmbeddingInput, fields: Partial<EmbeddingRequest> = {}) =>
  (await mockEmbeddings(request(input, fields), 0)).response.data.map((item) => item.embedding as number[]);

describe('the mock’s embeddings', () => {
  it('are the same for the same input, and differ between inputs', async () => {
    const [first, second, again] = await vectors({ kind: 'text', texts: ['cat', 'dog', 'cat'] });
    expect(first).toEqual(again);
    expect(first).not.toEqual(second);
    expect(await vectors({ kind: 'text', texts: ['cat'] })).toEqual([first]);
  });

  it('have the asked dimensions (256 by default) and length 1', async () => {
    const [standard] = await vectors({ kind: 'text', texts: ['cat'] });
    const [short] = await vectors({ kind: 'tokens', tokens: [[1, 2]] }, { dimensions: 3 });
    expect(standard).toHaveLength(mockDefaultDimensions);
    expect(short).toHaveLength(3);
    for (const vector of [standard ?? [], short ?? []]) {
      expect(Math.hypot(...vector)).toBeCloseTo(1, 5);
    }
  });

  it('report the deterministic tokenizer’s count, and one token per id', async () => {
    const texts = await mockEmbeddings(request({ kind: 'text', texts: ['Hello, world!', 'embeddings'] }), 0);
    expect(texts.usage).toEqual({
      tokens: expect.objectContaining({ input: countTokens('Hello, world!') + countTokens('embeddings') }),
      estimated: false,
    });
    expect(texts.response.usage.prompt_tokens).toBe(texts.usage.tokens.input);
    const tokens = await mockEmbeddings(request({ kind: 'tokens', tokens: [[1, 2, 3], [4]] }), 0);
    expect(tokens.usage.tokens.input).toBe(4);
  });

  it('never report more tokens than the hold’s bound', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ minLength: 1, maxLength: 100, unit: 'grapheme' }), { minLength: 1, maxLength: 8 }),
        async (texts) => {
          const input: EmbeddingInput = { kind: 'text', texts };
          const answer = await mockEmbeddings(request(input, { dimensions: 2 }), 0);
          expect(answer.usage.tokens.input).toBeLessThanOrEqual(embeddingInputTokenBound(input));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('encode as base64 exactly the floats they answer', async () => {
    const [floats] = await vectors({ kind: 'text', texts: ['cat'] });
    const answer = await mockEmbeddings(request({ kind: 'text', texts: ['cat'] }, { encodingFormat: 'base64' }), 0);
    expect(float32FromBase64(answer.response.data[0]?.embedding as string)).toEqual(floats);
  });

  it('wait the mock latency, and stop when the call is cancelled', async () => {
    const started = Date.now();
    await mockEmbeddings(request({ kind: 'text', texts: ['cat'] }), 30);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    const controller = new AbortController();
    const pending = mockEmbeddings(request({ kind: 'text', texts: ['cat'] }), 10_000, controller.signal);
    controller.abort();
    const error = await pending.catch((caught: unknown) => caught);
    expect(FaucetError.isInstance(error) && error.code).toBe('upstream_error');
  });
});
