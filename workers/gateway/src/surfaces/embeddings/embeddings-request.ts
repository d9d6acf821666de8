/**
 * The `POST /v1/embeddings` body as OpenAI defines it, plus Faucet's `feature` and `route_mode`.
 * Closed like the chat body (an unknown field is refused, never forwarded: it may change what the
 * provider bills). Then, per model, what its provider cannot do is refused before any hold: token
 * input where the provider takes text only, more inputs than one upstream call carries, `dimensions`
 * for a model that cannot shorten its vectors.
 */
import { z } from 'zod';
import { closedObjects } from '../../openai/chat-schemas.ts';
import type { ProviderName } from '#shared/providers/provider-catalog.ts';
import { describeZodError } from '#shared/render-error.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { routeModeSchema } from '#shared/wire/route-modes.ts';
import { chatCompletionsBodySchema } from '../../routes/chat-completions-body.ts';
import type { ModelReference } from '../../routing/parse-model.ts';
import { embeddingInputTokenBound, maxEmbeddingInputTokenBound } from './embedding-bounds.ts';
import {
  embeddingModelRefusal,
  embeddingProviderNames,
  embeddingProviderTraits,
  maxDimensions,
  openAiMaxInputs,
} from './embedding-models.ts';

/** Largest token id accepted: above every vocabulary, and within a 32-bit signed integer. */
const maxTokenId = 2_147_483_647;

/** An object that refuses every key it does not name (as the chat schema's). */
const closedObject = closedObjects({});

const tokenIdRule = `token ids are integers from 0 to ${maxTokenId}`;
const text = z.string().min(1, 'must not be an empty string');
const tokenId = z.number({ error: tokenIdRule }).int(tokenIdRule).min(0, tokenIdRule).max(maxTokenId, tokenIdRule);
const tokens = z.array(tokenId).min(1, 'must not be an empty token array');
const inputList = <Item extends z.ZodType>(item: Item) =>
  z.array(item).min(1, 'must not be an empty array').max(openAiMaxInputs, `at most ${openAiMaxInputs} inputs in one request`);

/**
 * Zod names the element at fault when one form alone fits the input's shape; when none does, its own
 * message would be a bare "Invalid input", so this names the problem.
 */
function inputProblem(value: unknown): string {
  const forms = 'a non-empty string, an array of non-empty strings, an array of token ids, or an array of token-id arrays';
  if (!Array.isArray(value)) return `must be ${forms}`;
  if (value.length === 0) return 'must not be an empty array';
  const isTokenId = (item: unknown) => tokenId.safeParse(item).success;
  if (typeof value[0] === 'number') {
    const bad = value.findIndex((item) => !isTokenId(item));
    return `item ${bad}: ${tokenIdRule}, and an input is all strings, all token ids or all token arrays`;
  }
  if (value.length > openAiMaxInputs) return `at most ${openAiMaxInputs} inputs in one request`;
  for (const [index, item] of value.entries()) {
    if (item === '') return `item ${index} must not be an empty string`;
    if (!Array.isArray(item)) continue;
    if (item.length === 0) return `item ${index} must not be an empty token array`;
    const bad = item.findIndex((id) => !isTokenId(id));
    if (bad >= 0) return `item ${index}[${bad}]: ${tokenIdRule}`;
  }
  return `must be ${forms}, not a mix of them`;
}

const embeddingInputSchema = z
  .union([text, inputList(text), tokens, inputList(tokens)], {
    error: (issue) => (issue.code === 'invalid_union' ? inputProblem(issue.input) : undefined),
  })
  .superRefine((input, context) => {
    const bound = embeddingInputTokenBound(normalizeEmbeddingInput(input));
    if (bound > maxEmbeddingInputTokenBound) {
      context.addIssue({
        code: 'custom',
        message: `is too large: it may count up to ${bound} tokens (UTF-8 bytes of its text, plus its token ids), above the ${maxEmbeddingInputTokenBound} one request may hold`,
      });
    }
  });

type EmbeddingInputField = z.infer<typeof embeddingInputSchema>;

export const embeddingsBodySchema = closedObject({
  model: chatCompletionsBodySchema.shape.model,
  input: embeddingInputSchema,
  dimensions: z.number().int().positive().nullish(),
  encoding_format: z.enum(['float', 'base64'], { error: 'must be "float" or "base64"' }).nullish(),
  user: z.string().nullish(),
  /** Absent: the app's default feature, so an unmodified OpenAI client works. */
  feature: z.string().min(1).max(128).optional(),
  route_mode: routeModeSchema.optional(),
});

export type EmbeddingsBody = z.infer<typeof embeddingsBodySchema>;

/** The inputs of a request, one form: texts, or token-id arrays. */
export type EmbeddingInput = { kind: 'text'; texts: string[] } | { kind: 'tokens'; tokens: number[][] };

function normalizeEmbeddingInput(input: EmbeddingInputField): EmbeddingInput {
  if (typeof input === 'string') return { kind: 'text', texts: [input] };
  const [first] = input;
  if (typeof first === 'string') return { kind: 'text', texts: input as string[] };
  if (typeof first === 'number') return { kind: 'tokens', tokens: [input as number[]] };
  return { kind: 'tokens', tokens: input as number[][] };
}

export function embeddingInputCount(input: EmbeddingInput): number {
  return input.kind === 'text' ? input.texts.length : input.tokens.length;
}

/** What a provider call receives: the model bare (without `provider:`), the input in one form, the options resolved. */
export interface EmbeddingRequest {
  model: string;
  input: EmbeddingInput;
  /** Null: the model's own length. */
  dimensions: number | null;
  encodingFormat: 'float' | 'base64';
  user: string | null;
}

/** The body of a request, or a 400 naming the field at fault. */
export function readEmbeddingsBody(json: unknown): EmbeddingsBody {
  const parsed = embeddingsBodySchema.safeParse(json);
  if (!parsed.success) throw new FaucetError('invalid_request', describeZodError(parsed.error));
  return parsed.data;
}

/** The request for the model `reference` names; refuses (400) what its provider or the model cannot do. */
export function embeddingRequestFor(reference: ModelReference, body: EmbeddingsBody): EmbeddingRequest {
  const { provider, model } = reference;
  const refusal = embeddingModelRefusal(provider, model);
  const traits = embeddingProviderTraits(provider);
  if (refusal !== null || traits === undefined) throw new FaucetError('invalid_request', `model: ${refusal}`);
  const input = normalizeEmbeddingInput(body.input);
  if (input.kind === 'tokens' && !traits.tokenInput) {
    throw new FaucetError(
      'invalid_request',
      `input: token arrays are accepted for ${tokenProviders().join(', ')} models only; send text to ${provider} models.`,
    );
  }
  const count = embeddingInputCount(input);
  if (count > traits.maxInputs) {
    throw new FaucetError(
      'invalid_request',
      `input: ${provider} models take at most ${traits.maxInputs} inputs in one call (this request has ${count}); a request is one upstream call, so send several requests.`,
    );
  }
  const dimensions = body.dimensions ?? null;
  if (dimensions !== null) {
    const max = maxDimensions(provider, model);
    if (max === null) {
      throw new FaucetError(
        'invalid_request',
        `dimensions: model "${provider}:${model}" cannot shorten its vectors; leave dimensions out.`,
      );
    }
    if (dimensions > max) throw new FaucetError('invalid_request', `dimensions: at most ${max} for model "${provider}:${model}".`);
  }
  return { model, input, dimensions, encodingFormat: body.encoding_format ?? 'float', user: body.user ?? null };
}

function tokenProviders(): ProviderName[] {
  return embeddingProviderNames().filter((name) => embeddingProviderTraits(name)?.tokenInput && name !== 'mock');
}
