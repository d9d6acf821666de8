/**
 * The OpenAI chat wire format as far as the gateway reads it. Requests are closed: every field the
 * gateway accepts is named here (an unknown field is refused, never forwarded, because a field the
 * gateway does not know may change what the provider bills); which of them each provider protocol
 * may send is `providers/accepted-fields.ts`. Responses come from the upstream and stay loose.
 */
import { z } from 'zod';

/** Fields refused by name, with the reason a developer needs to see. */
const refusedFieldReasons: Record<string, string> = {
  audio: 'audio output is priced differently from text',
  prediction: 'rejected prediction tokens are billed on top of the completion',
  web_search_options: 'web search is billed per call, outside the token price',
  metadata: 'it only applies to stored completions, and the gateway never stores them',
  prompt_cache_retention: 'extended prompt caching is not priced',
};

/**
 * The closed objects of one API's schema: an object that refuses every key it does not name, the
 * refusal saying why when `reasons` knows the key (a field that would change the price or the
 * answer is refused, never dropped). Every surface's schema is built with one.
 */
export function closedObjects(reasons: Readonly<Record<string, string>>) {
  const notAccepted = (issue: z.core.$ZodRawIssue): string | undefined => {
    if (issue.code !== 'unrecognized_keys') return undefined;
    return issue.keys.map((key) => `field "${key}" is not accepted${reasons[key] ? `: ${reasons[key]}` : ''}`).join('; ');
  };
  return function closedObject<Shape extends z.core.$ZodLooseShape>(shape: Shape) {
    return z.strictObject(shape, { error: notAccepted });
  };
}

/** An object that refuses every key it does not name. */
const closedObject = closedObjects(refusedFieldReasons);

/**
 * Anthropic's prompt-cache breakpoint, as LiteLLM carries it over chat (on a content part or a tool).
 * Only the anthropic protocol sends it (OpenAI-compatible providers cache by themselves); a `1h`
 * breakpoint is sent as the default five minutes, whose write price the catalog has (docs/surfaces.md).
 */
export const cacheControlSchema = closedObject({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() });
export type CacheControl = z.infer<typeof cacheControlSchema>;

const textPart = closedObject({ type: z.literal('text'), text: z.string(), cache_control: cacheControlSchema.optional() });
const imagePart = closedObject({
  type: z.literal('image_url'),
  image_url: closedObject({ url: z.string(), detail: z.enum(['auto', 'low', 'high']).optional() }),
  cache_control: cacheControlSchema.optional(),
});
const contentPart = z.discriminatedUnion('type', [textPart, imagePart], {
  error: (issue) =>
    issue.code === 'invalid_union'
      ? 'only "text" and "image_url" content parts are accepted: audio and file parts cannot be bounded before the call'
      : undefined,
});

/**
 * Anthropic's thinking, as LiteLLM carries it over chat: the assistant's earlier `thinking_blocks`
 * (each with the signature Anthropic checks) and the request's `thinking`. Only the anthropic
 * protocol sends them; for the others `thinking` is translated to `reasoning_effort` and earlier
 * blocks stay out, since no other provider can check their signatures (accepted-fields.ts).
 */
export const thinkingBlockSchema = z.discriminatedUnion('type', [
  closedObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string().optional() }),
  closedObject({ type: z.literal('redacted_thinking'), data: z.string() }),
]);
export type ThinkingBlock = z.infer<typeof thinkingBlockSchema>;

/** `display: omitted` streams a thinking block without its text (the signature carries it); billed the same. */
const thinkingDisplay = z.enum(['summarized', 'omitted']).optional();
export const thinkingSchema = z.discriminatedUnion('type', [
  closedObject({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1024), display: thinkingDisplay }),
  closedObject({ type: z.literal('disabled') }),
  closedObject({ type: z.literal('adaptive'), display: thinkingDisplay }),
]);
export type Thinking = z.infer<typeof thinkingSchema>;

const toolCall = closedObject({
  id: z.string(),
  type: z.literal('function').optional(),
  function: closedObject({ name: z.string(), arguments: z.string() }),
});
const functionDefinition = closedObject({
  name: z.string(),
  description: z.string().optional(),
  parameters: z.record(z.string(), z.unknown()).optional(),
  strict: z.boolean().nullish(),
});

export const chatMessageSchema = closedObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z
    .union([z.string(), z.array(contentPart), z.null()], {
      // Names the part that failed instead of a bare "Invalid input" for the whole union.
      error: (issue) => {
        const [first] = issue.code === 'invalid_union' && Array.isArray(issue.input) ? (issue.errors[1] ?? []) : [];
        return first === undefined ? undefined : `part ${first.path.join('.')}: ${first.message}`;
      },
    })
    .optional(),
  name: z.string().max(256).optional(),
  tool_calls: z.array(toolCall).optional(),
  tool_call_id: z.string().optional(),
  /** Legacy (pre-tools) assistant call. */
  function_call: closedObject({ name: z.string(), arguments: z.string() }).nullish(),
  refusal: z.string().nullish(),
  /** An assistant turn's thinking, to send back to Anthropic (a tool loop with thinking needs it). */
  thinking_blocks: z.array(thinkingBlockSchema).max(256).optional(),
});

export type ChatMessage = z.infer<typeof chatMessageSchema>;

const responseFormat = z.discriminatedUnion('type', [
  closedObject({ type: z.literal('text') }),
  closedObject({ type: z.literal('json_object') }),
  closedObject({
    type: z.literal('json_schema'),
    json_schema: closedObject({
      name: z.string(),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullish(),
    }),
  }),
]);

/** The upstream-facing part of a chat request: what a provider adapter receives (model already bare). */
export const chatRequestSchema = closedObject({
  model: z.string(),
  messages: z.array(chatMessageSchema).min(1).max(2048),
  stream: z.boolean().optional(),
  stream_options: closedObject({ include_usage: z.boolean().optional() }).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  n: z.literal(1, { error: 'n must be 1: Faucet meters one choice per call' }).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  seed: z.number().int().nullish(),
  logit_bias: z.record(z.string(), z.number()).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  response_format: responseFormat.optional(),
  reasoning_effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']).nullish(),
  /** Anthropic's own thinking setting (its budget counts in the max tokens); `reasoning_effort` for the other providers. */
  thinking: thinkingSchema.optional(),
  verbosity: z.enum(['low', 'medium', 'high']).nullish(),
  tools: z
    .array(closedObject({ type: z.literal('function'), function: functionDefinition, cache_control: cacheControlSchema.optional() }))
    .optional(),
  tool_choice: z
    .union([
      z.enum(['none', 'auto', 'required']),
      closedObject({ type: z.literal('function'), function: closedObject({ name: z.string() }) }),
    ])
    .optional(),
  parallel_tool_calls: z.boolean().optional(),
  /** Legacy (pre-tools) function calling; counted in the hold like tools. */
  functions: z.array(functionDefinition).max(128).optional(),
  function_call: z.union([z.enum(['none', 'auto']), closedObject({ name: z.string() })]).optional(),
  user: z.string().optional(),
  safety_identifier: z.string().optional(),
  service_tier: z
    .enum(['auto', 'default'], {
      error: 'service_tier must be "auto" or "default": other tiers are billed at a different price than the catalog',
    })
    .nullish(),
  store: z
    .literal(false, { error: "store must be false: the gateway does not keep end users' prompts in the platform's provider account" })
    .nullish(),
  modalities: z.array(z.literal('text', { error: 'only text output is accepted: audio output is priced differently from text' })).nullish(),
});

export type ChatRequest = z.infer<typeof chatRequestSchema>;

/** A detail count (no `.catch`: the OpenAPI generator cannot describe it, and /openapi.json answered 500). */
const tokenCount = z.number().int().nonnegative().nullish();

export const usageSchema = z.looseObject({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative().optional(),
  /**
   * Parts of `prompt_tokens`; `cache_write_tokens` (every cache write) and `cache_write_1h_tokens` (the
   * part of those written for one hour) are Faucet's (OpenAI has no cache writes), set by adapters
   * whose provider bills them.
   */
  prompt_tokens_details: z
    .looseObject({
      cached_tokens: tokenCount,
      cache_write_tokens: tokenCount,
      cache_write_1h_tokens: tokenCount,
      audio_tokens: tokenCount,
    })
    .nullish(),
  /** Parts of `completion_tokens`. */
  completion_tokens_details: z.looseObject({ reasoning_tokens: tokenCount, audio_tokens: tokenCount }).nullish(),
});

export type ChatUsage = z.infer<typeof usageSchema>;

const toolCallDelta = z.looseObject({
  index: z.number().int(),
  id: z.string().optional(),
  type: z.string().optional(),
  function: z.looseObject({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
});

export const chatCompletionSchema = z.looseObject({
  id: z.string(),
  object: z.string().default('chat.completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.looseObject({
      index: z.number().int(),
      message: z.looseObject({
        role: z.string(),
        content: z.string().nullish(),
        tool_calls: z
          .array(
            z.looseObject({
              id: z.string(),
              type: z.string().optional(),
              function: z.looseObject({ name: z.string(), arguments: z.string() }),
            }),
          )
          .optional(),
        refusal: z.string().nullish(),
        /** The model's thinking as text (Anthropic's, DeepSeek's), and Anthropic's blocks with their signatures. */
        reasoning_content: z.string().nullish(),
        thinking_blocks: z.array(z.looseObject({ type: z.string() })).nullish(),
      }),
      finish_reason: z.string().nullable(),
    }),
  ),
  usage: usageSchema.nullish(),
});

export type ChatCompletion = z.infer<typeof chatCompletionSchema>;

export const chatCompletionChunkSchema = z.looseObject({
  id: z.string(),
  object: z.string().default('chat.completion.chunk'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.looseObject({
      index: z.number().int(),
      delta: z.looseObject({
        role: z.string().nullish(),
        content: z.string().nullish(),
        refusal: z.string().nullish(),
        tool_calls: z.array(toolCallDelta).nullish(),
        reasoning_content: z.string().nullish(),
        /** Streamed: a block's signature once it is known (`thinking` empty), or a redacted block whole. */
        thinking_blocks: z.array(z.looseObject({ type: z.string() })).nullish(),
      }),
      finish_reason: z.string().nullish(),
    }),
  ),
  usage: usageSchema.nullish(),
});

export type ChatCompletionChunk = z.infer<typeof chatCompletionChunkSchema>;
