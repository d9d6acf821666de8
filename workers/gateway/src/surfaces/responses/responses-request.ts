/**
 * The OpenAI Responses request (`POST /v1/responses`) as far as the gateway serves it (its chat
 * translation: `chat-request-of-responses.ts`). Closed like the
 * chat schema: a field the gateway does not know may change what the provider bills, so it is refused
 * with its name, never dropped.
 *
 * No response is stored this round, so whatever needs stored state is refused: `previous_response_id`,
 * `conversation`, `background: true`, `item_reference` inputs, and an explicit `store: true`. An absent
 * `store` is accepted although OpenAI defaults it to true: the official clients send none, and the
 * answer says `store: false`, which is what happened. Built-in tools run (and bill) on OpenAI's side,
 * outside the token price, so only function tools are accepted. Reasoning items in `input` are dropped:
 * the chat surface has no place for them, and they carry no instruction of the caller's.
 */
import { z } from 'zod';
import { closedObjects } from '../../openai/chat-schemas.ts';
import { describeZodError } from '#shared/render-error.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { chatCompletionsBodySchema } from '../../routes/chat-completions-body.ts';

/** Fields refused by name, with the reason a developer needs to see. */
const refusedFieldReasons: Record<string, string> = {
  prompt: 'stored prompt templates live in an OpenAI project the gateway does not use',
  prompt_cache_key: 'it is not passed to every provider, so it is not accepted',
  prompt_cache_retention: 'extended prompt caching is not priced',
  context_management: 'server-side compaction needs stored responses, and the gateway stores none',
  max_tool_calls: 'it limits built-in tools, which are not accepted',
  top_logprobs: 'log probabilities are not returned on this surface',
  access_programs: 'it is not passed to every provider',
  moderation: 'it is not passed to every provider',
};

const closedObject = closedObjects(refusedFieldReasons);

/** The `type` of a value a discriminated union found no option for. */
function typeOf(input: unknown): string {
  const type = typeof input === 'object' && input !== null ? (input as { type?: unknown }).type : undefined;
  return typeof type === 'string' ? type : String(type);
}

const builtInToolReasons: Record<string, string> = {
  web_search: 'web search is billed per call, outside the token price',
  web_search_preview: 'web search is billed per call, outside the token price',
  file_search: 'file search runs on OpenAI vector stores and is billed per call',
  computer_use_preview: "computer use runs on OpenAI's side, outside the gateway",
  computer: "computer use runs on OpenAI's side, outside the gateway",
  code_interpreter: 'code interpreter containers are billed per session, outside the token price',
  image_generation: 'image generation is priced per image, not per token',
  mcp: "remote MCP tools are called by OpenAI's servers, outside the gateway",
};

const textInput = closedObject({ type: z.literal('input_text'), text: z.string() });
const contentPart = z.discriminatedUnion(
  'type',
  [
    textInput,
    closedObject({
      type: z.literal('input_image'),
      image_url: z.string({ error: 'input_image needs image_url: file_id names OpenAI file storage, which the gateway does not use' }),
      detail: z.enum(['auto', 'low', 'high']).optional(),
      file_id: z.null().optional(),
    }),
    /** Earlier model output sent back as history (the clients resend what they were given). */
    closedObject({
      type: z.literal('output_text'),
      text: z.string(),
      annotations: z.array(z.unknown()).optional(),
      logprobs: z.array(z.unknown()).optional(),
    }),
    closedObject({ type: z.literal('refusal'), refusal: z.string() }),
  ],
  {
    error: (issue) =>
      issue.code === 'invalid_union'
        ? `content part type "${typeOf(issue.input)}" is not accepted: only input_text, input_image, output_text and refusal parts are (file and audio inputs cannot be bounded before the call)`
        : undefined,
  },
);

const itemStatus = z.enum(['in_progress', 'completed', 'incomplete']).nullish();

const messageItem = closedObject({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(contentPart)]),
  id: z.string().nullish(),
  status: itemStatus,
  phase: z.enum(['commentary', 'final_answer']).nullish(),
});

const functionCallItem = closedObject({
  type: z.literal('function_call'),
  call_id: z.string().min(1),
  name: z.string(),
  arguments: z.string(),
  id: z.string().nullish(),
  status: itemStatus,
});

const functionCallOutputItem = closedObject({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1),
  output: z.union([
    z.string(),
    z.array(
      z.discriminatedUnion('type', [textInput], {
        error: (issue) =>
          issue.code === 'invalid_union'
            ? 'only input_text parts are accepted in a function call output: images and files are not'
            : undefined,
      }),
    ),
  ]),
  id: z.string().nullish(),
  status: itemStatus,
});

/** Accepted so a client can resend a whole earlier output, then dropped (see the header). */
const reasoningItem = z.looseObject({ type: z.literal('reasoning') });

const inputItem = z.discriminatedUnion('type', [messageItem, functionCallItem, functionCallOutputItem, reasoningItem], {
  error: (issue) => {
    if (issue.code !== 'invalid_union') return undefined;
    const type = typeOf(issue.input);
    return type === 'item_reference'
      ? 'item references need stored responses, and the gateway stores none: send the item itself'
      : `input item type "${type}" is not accepted: only messages, function calls and function call outputs are (built-in tools are not served)`;
  },
});

const functionTool = closedObject({
  type: z.literal('function'),
  name: z.string(),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

const tool = z.discriminatedUnion('type', [functionTool], {
  error: (issue) => {
    if (issue.code !== 'invalid_union') return undefined;
    const type = typeOf(issue.input);
    return `tool type "${type}" is not accepted: only function tools are${builtInToolReasons[type] ? ` (${builtInToolReasons[type]})` : " (built-in tools run on OpenAI's side, billed outside the token price)"}`;
  },
});

const textFormat = z.discriminatedUnion('type', [
  closedObject({ type: z.literal('text') }),
  closedObject({ type: z.literal('json_object') }),
  closedObject({
    type: z.literal('json_schema'),
    name: z.string(),
    schema: z.record(z.string(), z.unknown()),
    description: z.string().optional(),
    strict: z.boolean().nullish(),
  }),
]);

const noSummary = z
  .enum(['auto'], { error: 'reasoning summaries are not returned on this surface: only "auto" (which allows none) is accepted' })
  .nullish();

const { model, feature, route_mode } = chatCompletionsBodySchema.shape;

export const responsesRequestSchema = closedObject({
  model,
  input: z.union([z.string(), z.array(inputItem)]).optional(),
  instructions: z.string().nullish(),
  tools: z.array(tool).max(128).optional(),
  tool_choice: z
    .union([z.enum(['auto', 'none', 'required']), closedObject({ type: z.literal('function'), name: z.string() })], {
      error: 'tool_choice must be "auto", "none", "required" or {"type":"function","name":…}: built-in tools are not accepted',
    })
    .optional(),
  parallel_tool_calls: z.boolean().nullish(),
  text: closedObject({ format: textFormat.optional(), verbosity: z.enum(['low', 'medium', 'high']).nullish() }).optional(),
  reasoning: closedObject({
    effort: z
      .enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh'], {
        error: 'reasoning.effort must be none, minimal, low, medium, high or xhigh',
      })
      .nullish(),
    summary: noSummary,
    generate_summary: noSummary,
  }).nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  /** Echoed on the answer, never sent upstream (it only applies to what a provider stores). */
  metadata: z
    .record(z.string().max(64), z.string().max(512))
    .refine((pairs) => Object.keys(pairs).length <= 16, 'at most 16 pairs')
    .nullish(),
  stream: z.boolean().nullish(),
  /** Obfuscation pads deltas against side channels on OpenAI's own servers; the gateway adds none. */
  stream_options: closedObject({ include_obfuscation: z.boolean().optional() }).nullish(),
  user: z.string().optional(),
  safety_identifier: z.string().optional(),
  service_tier: z.string().nullish(),
  store: z.literal(false, { error: 'store must be false or absent: the gateway stores no responses' }).nullish(),
  background: z.literal(false, { error: 'background must be false or absent: the gateway stores no responses to poll' }).nullish(),
  previous_response_id: z
    .null({ error: 'previous_response_id is not accepted: the gateway stores no responses; send the whole conversation in input' })
    .optional(),
  conversation: z
    .null({ error: 'conversation is not accepted: the gateway stores no conversations; send the whole conversation in input' })
    .optional(),
  /** Nothing else can be honoured: the gateway returns no reasoning items, so there is no encrypted content to include. */
  include: z
    .array(z.enum(['reasoning.encrypted_content'], { error: (issue) => `"${String(issue.input)}" cannot be included on this surface` }))
    .nullish(),
  truncation: z.enum(['disabled'], { error: 'truncation must be "disabled": the gateway does not shorten a conversation' }).nullish(),
});

export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;

/** The route's body: a Responses request plus Faucet's `feature` and `route_mode`, as on the chat route. */
export const responsesBodySchema = responsesRequestSchema.extend({ feature, route_mode });

export type ResponsesBody = z.infer<typeof responsesBodySchema>;

/** Parses a JSON body; a refusal is a 400 `invalid_request` naming the field. */
export function parseResponsesBody(json: unknown): ResponsesBody {
  const parsed = responsesBodySchema.safeParse(json);
  if (!parsed.success) throw new FaucetError('invalid_request', describeZodError(new z.ZodError(parsed.error.issues.flatMap(unwrapUnion))));
  return parsed.data;
}

/**
 * A string-or-list field (`input`, a message's `content`) that failed inside its list: the list's own
 * issues, so the message names the item and the reason instead of a bare "Invalid input".
 */
function unwrapUnion(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
  if (issue.code !== 'invalid_union') return [issue];
  const failedInside = issue.errors.filter((branch) => !branch.every((inner) => inner.path.length === 0 && inner.code === 'invalid_type'));
  if (failedInside.length !== 1) return [issue];
  return failedInside[0]!.flatMap((inner) => unwrapUnion({ ...inner, path: [...issue.path, ...inner.path] }));
}

export type InputItem = z.infer<typeof inputItem>;
export type MessageItem = z.infer<typeof messageItem>;
