/**
 * The answer every embeddings provider is translated into: OpenAI's list of embeddings, each vector
 * as floats or as base64 (embedding-encoding.ts) as the client asked, and the usage the call is
 * metered with — the provider's count, else the hold's bound marked `estimated` (the `faucet` object
 * carries the mark).
 */
import { tokenUsage } from '#shared/providers/token-usage.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import type { MeteredUsage } from '../../metering/metered-usage.ts';
import { embeddingInputTokenBound } from './embedding-bounds.ts';
import { float32Base64, float32FromBase64 } from './embedding-encoding.ts';
import { embeddingInputCount, type EmbeddingRequest } from './embeddings-request.ts';

export interface EmbeddingsResponse {
  object: 'list';
  data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface EmbeddingsAnswer {
  response: EmbeddingsResponse;
  /** What settle-call books: input tokens only, `estimated` when the provider reported none. */
  usage: MeteredUsage;
}

/** One vector as the upstream sent it: floats, or base64 where it answered `encoding_format: "base64"` itself. */
type UpstreamVector = readonly number[] | string;

/**
 * The client's answer from the upstream's vectors (in input order) and its reported input tokens
 * (null: none reported). A vector count or length that does not match the request is the upstream's
 * fault (502): its vectors cannot be told apart from the ones asked for.
 */
export function embeddingsAnswer(
  request: EmbeddingRequest,
  vectors: readonly UpstreamVector[],
  model: string,
  reportedInputTokens: number | null,
  label: string,
): EmbeddingsAnswer {
  const expected = embeddingInputCount(request.input);
  if (vectors.length !== expected) {
    throw new FaucetError('upstream_error', `${label} answered ${vectors.length} embeddings for ${expected} inputs.`);
  }
  const data = vectors.map((vector, index) => {
    const floats = typeof vector === 'string' ? float32FromBase64(vector) : vector;
    if (floats === null) throw new FaucetError('upstream_error', `${label} answered an embedding that is not base64 float32.`);
    if (request.dimensions !== null && floats.length !== request.dimensions) {
      throw new FaucetError('upstream_error', `${label} answered ${floats.length} dimensions where ${request.dimensions} were asked.`);
    }
    const embedding = request.encodingFormat === 'float' ? [...floats] : typeof vector === 'string' ? vector : float32Base64(floats);
    return { object: 'embedding' as const, index, embedding };
  });
  const usage: MeteredUsage =
    reportedInputTokens === null
      ? { tokens: tokenUsage({ input: embeddingInputTokenBound(request.input) }), estimated: true }
      : { tokens: tokenUsage({ input: reportedInputTokens }), estimated: false };
  const inputTokens = usage.tokens.input;
  return { response: { object: 'list', data, model, usage: { prompt_tokens: inputTokens, total_tokens: inputTokens } }, usage };
}
