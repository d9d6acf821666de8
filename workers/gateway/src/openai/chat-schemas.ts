/**
 * The OpenAI chat wire format as far as the gateway reads it. Objects are loose: fields the gateway
 * does not interpret (logprobs, response_format, seed, …) pass through to the upstream and back.
 */
import { z } from 'zod';

const textPart = z.looseObject({ type: z.literal('text'), text: z.string() });
const contentPart = z.looseObject({ type: z.string() });

export const chatMessageSchema = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
  name: z.string().max(256).optional(),
  tool_calls: z
    .array(
      z.looseObject({
        id: z.string(),
        type: z.string().optional(),
        function: z.looseObject({ name: z.string(), arguments: z.string() }),
      }),
    )
    .optional(),
  tool_call_id: z.string().optional(),
});

export type ChatMessage = z.infer<typeof chatMessageSchema>;
export type TextPart = z.infer<typeof textPart>;

/** The upstream-facing part of a chat request: what a provider adapter receives (model already bare). */
export const chatRequestSchema = z.looseObject({
  model: z.string(),
  messages: z.array(chatMessageSchema).min(1).max(2048),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  n: z.literal(1, { error: 'n must be 1: Faucet meters one choice per call' }).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
  tools: z
    .array(
      z.looseObject({
        type: z.string(),
        function: z.looseObject({
          name: z.string(),
          description: z.string().optional(),
          parameters: z.record(z.string(), z.unknown()).optional(),
        }),
      }),
    )
    .optional(),
  tool_choice: z
    .union([z.enum(['none', 'auto', 'required']), z.looseObject({ type: z.string(), function: z.looseObject({ name: z.string() }) })])
    .optional(),
  parallel_tool_calls: z.boolean().optional(),
  user: z.string().optional(),
});

export type ChatRequest = z.infer<typeof chatRequestSchema>;

export const usageSchema = z.looseObject({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative().optional(),
  prompt_tokens_details: z.looseObject({ cached_tokens: z.number().int().nonnegative().nullish() }).nullish(),
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
        tool_calls: chatMessageSchema.shape.tool_calls,
        refusal: z.string().nullish(),
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
      }),
      finish_reason: z.string().nullish(),
    }),
  ),
  usage: usageSchema.nullish(),
});

export type ChatCompletionChunk = z.infer<typeof chatCompletionChunkSchema>;
