/**
 * The built-in `mock` provider's embeddings: no network, no key. Each input's vector is drawn from a
 * generator seeded by a hash of the input, so the same input always gets the same vector (and equal
 * inputs equal vectors), scaled to length 1 as OpenAI's are. Usage is the deterministic tokenizer's
 * count (token arrays: one per id), as the mock's chat counts its prompts.
 */
import { FaucetError } from '#shared/wire/errors.ts';
import { countTokens } from '../../tokens/tokenize.ts';
import { mockDefaultDimensions } from './embedding-models.ts';
import type { EmbeddingRequest } from './embeddings-request.ts';
import { type EmbeddingsAnswer, embeddingsAnswer } from './embeddings-response.ts';

export async function mockEmbeddings(request: EmbeddingRequest, latencyMs: number, signal?: AbortSignal): Promise<EmbeddingsAnswer> {
  const dimensions = request.dimensions ?? mockDefaultDimensions;
  const seeds =
    request.input.kind === 'text'
      ? request.input.texts.map((text) => `text:${text}`)
      : request.input.tokens.map((ids) => `tokens:${ids.join(',')}`);
  const usage =
    request.input.kind === 'text'
      ? request.input.texts.reduce((total, text) => total + countTokens(text), 0)
      : request.input.tokens.reduce((total, ids) => total + ids.length, 0);
  await pause(latencyMs, signal);
  return embeddingsAnswer(
    request,
    seeds.map((seed) => mockVector(seed, dimensions)),
    request.model,
    usage,
    'The mock provider',
  );
}

/** A unit vector of `dimensions` float32 values, the same for the same seed. */
function mockVector(seed: string, dimensions: number): number[] {
  const next = mulberry32(fnv1a(seed));
  const raw = Array.from({ length: dimensions }, () => next() * 2 - 1);
  const length = Math.sqrt(raw.reduce((sum, value) => sum + value * value, 0)) || 1;
  // Rounded to float32 so that a base64 answer decodes to exactly these floats.
  return raw.map((value) => Math.fround(value / length));
}

/** 32-bit FNV-1a over the UTF-16 code units. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** A small seeded generator of floats in [0, 1). */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), state | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function pause(milliseconds: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(cancelled());
  if (milliseconds <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, milliseconds);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(cancelled());
      },
      { once: true },
    );
  });
}

function cancelled(): FaucetError {
  return new FaucetError('upstream_error', 'The call was cancelled before the upstream finished.');
}
