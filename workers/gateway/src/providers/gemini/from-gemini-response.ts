/**
 * Gemini `GenerateContentResponse` → OpenAI completion, usage included. The usage rule: Gemini counts
 * thinking apart from the answer (`thoughtsTokenCount` beside `candidatesTokenCount`) and bills both
 * as output, so OpenAI's `completion_tokens` is their sum with the thoughts as `reasoning_tokens`;
 * `promptTokenCount` already includes the cache hits (`cachedContentTokenCount`), and the prompt
 * tokens of its own tools (`toolUsePromptTokenCount`) are input too. Audio is named per modality.
 */
import { z } from 'zod';
import { FaucetError } from '#shared/wire/errors.ts';
import type { ChatCompletion, ChatUsage } from '../../openai/chat-schemas.ts';

const count = z.number().int().nonnegative().nullish().catch(null);
const modalityCounts = z
  .array(z.looseObject({ modality: z.string().optional(), tokenCount: count }))
  .nullish()
  .catch(null);

export const geminiUsageSchema = z.looseObject({
  promptTokenCount: count,
  candidatesTokenCount: count,
  thoughtsTokenCount: count,
  cachedContentTokenCount: count,
  toolUsePromptTokenCount: count,
  totalTokenCount: count,
  promptTokensDetails: modalityCounts,
  cacheTokensDetails: modalityCounts,
  candidatesTokensDetails: modalityCounts,
});

export type GeminiUsage = z.infer<typeof geminiUsageSchema>;

const partSchema = z.looseObject({
  text: z.string().optional(),
  thought: z.boolean().optional(),
  functionCall: z.looseObject({ id: z.string().optional(), name: z.string(), args: z.unknown().optional() }).optional(),
});

export const geminiResponseSchema = z.looseObject({
  responseId: z.string().optional(),
  modelVersion: z.string().optional(),
  candidates: z
    .array(
      z.looseObject({
        content: z.looseObject({ parts: z.array(partSchema).optional() }).optional(),
        finishReason: z.string().optional(),
      }),
    )
    .optional(),
  promptFeedback: z.looseObject({ blockReason: z.string().optional() }).optional(),
  usageMetadata: geminiUsageSchema.optional(),
});

export type GeminiPart = z.infer<typeof partSchema>;

const filtered = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY']);

export function openAiFinishReason(finishReason: string | undefined, calledTools: boolean): string | null {
  if (finishReason === undefined || finishReason === 'FINISH_REASON_UNSPECIFIED') return null;
  if (finishReason === 'MAX_TOKENS') return 'length';
  if (filtered.has(finishReason)) return 'content_filter';
  return calledTools ? 'tool_calls' : 'stop';
}

function audioTokens(details: GeminiUsage['promptTokensDetails']): number {
  return (details ?? []).filter((detail) => detail.modality === 'AUDIO').reduce((sum, detail) => sum + (detail.tokenCount ?? 0), 0);
}

/**
 * The usage, or null when Google reported no prompt count: an absent count is not a zero, so the
 * call is billed at its bound, marked estimated. (An answer with no candidates omits its output
 * count, which is then zero.)
 */
export function reportedUsage(usage: GeminiUsage | undefined): ChatUsage | null {
  if (usage === undefined || typeof usage.promptTokenCount !== 'number') return null;
  return openAiUsage(usage);
}

function openAiUsage(usage: GeminiUsage): ChatUsage {
  const promptTokens = (usage.promptTokenCount ?? 0) + (usage.toolUsePromptTokenCount ?? 0);
  const thoughts = usage.thoughtsTokenCount ?? 0;
  const completionTokens = (usage.candidatesTokenCount ?? 0) + thoughts;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: {
      cached_tokens: usage.cachedContentTokenCount ?? 0,
      // Audio not served from the cache: the cache hits are counted (and priced) as cache reads.
      audio_tokens: Math.max(0, audioTokens(usage.promptTokensDetails) - audioTokens(usage.cacheTokensDetails)),
    },
    completion_tokens_details: { reasoning_tokens: thoughts, audio_tokens: audioTokens(usage.candidatesTokensDetails) },
  };
}

/** The answer's text (thought summaries left out) and its function calls, as OpenAI tool calls. */
export function answerOf(parts: GeminiPart[], callIdPrefix: string) {
  const text = parts
    .filter((part) => part.text !== undefined && part.thought !== true)
    .map((part) => part.text)
    .join('');
  const toolCalls = parts
    .filter((part) => part.functionCall !== undefined)
    .map((part, index) => ({
      id: part.functionCall?.id ?? `${callIdPrefix}_${index}`,
      type: 'function',
      function: { name: part.functionCall?.name ?? '', arguments: JSON.stringify(part.functionCall?.args ?? {}) },
    }));
  return { text, toolCalls };
}

export function fromGeminiResponse(value: unknown, model: string, created: number): ChatCompletion {
  const parsed = geminiResponseSchema.safeParse(value);
  if (!parsed.success) throw new FaucetError('upstream_error', 'Google answered with an unexpected response shape.');
  const response = parsed.data;
  const id = response.responseId ?? `gemini-${created}`;
  const candidate = response.candidates?.[0];
  const { text, toolCalls } = answerOf(candidate?.content?.parts ?? [], `call_${id}`);
  // A prompt blocked before any answer comes back without candidates.
  const finishReason =
    candidate === undefined && response.promptFeedback?.blockReason !== undefined
      ? 'content_filter'
      : (openAiFinishReason(candidate?.finishReason, toolCalls.length > 0) ?? 'stop');
  return {
    id,
    object: 'chat.completion',
    created,
    model: response.modelVersion ?? model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && toolCalls.length > 0 ? null : text,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: finishReason,
      },
    ],
    usage: reportedUsage(response.usageMetadata),
  };
}
