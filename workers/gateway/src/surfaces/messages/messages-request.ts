/**
 * Anthropic's Messages request as Claude Code and `@anthropic-ai/sdk` send it. Closed like the chat
 * schema: every field is named, and each one is mapped, ignored for a stated reason (it changes
 * neither the answer nor the price once translated to chat), or refused with a 400 naming it.
 * The translation to the gateway's chat request is `chat-request-of-messages.ts`.
 */
import { z } from 'zod';
import { closedObjects } from '../../openai/chat-schemas.ts';
import { describeZodError } from '#shared/render-error.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { chatCompletionsBodySchema } from '../../routes/chat-completions-body.ts';

/** Fields refused by name, with the reason a developer needs to see. */
const refusedFieldReasons: Record<string, string> = {
  top_k: 'the gateway translates to a chat request, which has no top_k, so sampling would differ from what was asked',
  container: 'code execution containers are billed per hour, outside the token price',
  mcp_servers: "MCP connector calls run on the provider's side and are not metered",
  inference_geo: 'region-pinned inference is priced differently from the catalog',
  speed: 'fast mode is priced differently from the catalog',
  output_format: 'structured output is not carried by the translation',
  citations: 'citations cannot be returned by the translation',
};

const closedObject = closedObjects(refusedFieldReasons);

/** A union on `type` whose failure names the types that are accepted and, for known ones, why others are not. */
function blockUnion<const Options extends readonly [z.core.$ZodTypeDiscriminable, ...z.core.$ZodTypeDiscriminable[]]>(
  what: string,
  options: Options,
  refusedTypes: Record<string, string> = {},
) {
  const accepted = options.map((option) => [...(option._zod.propValues.type ?? [])].join('", "')).join('", "');
  return z.discriminatedUnion('type', options, {
    error: (issue) => {
      if (issue.code !== 'invalid_union') return undefined;
      const type = typeof issue.input === 'object' && issue.input !== null ? (issue.input as { type?: unknown }).type : undefined;
      const reason = typeof type === 'string' ? Object.entries(refusedTypes).find(([prefix]) => type.startsWith(prefix))?.[1] : undefined;
      const named = typeof type === 'string' ? `${what} of type "${type}" is not accepted` : `${what} needs a "type"`;
      return `${named}${reason ? `: ${reason}` : ''} (accepted: "${accepted}")`;
    },
  });
}

/** Content as a string or blocks; a failure names the block instead of a bare "Invalid input" for the whole union. */
function stringOrBlocks<Block extends z.ZodType>(block: Block) {
  return z.union([z.string(), z.array(block)], {
    error: (issue) => {
      const [first] = issue.code === 'invalid_union' && Array.isArray(issue.input) ? (issue.errors[1] ?? []) : [];
      return first === undefined ? undefined : `block ${first.path.join('.')}: ${first.message}`;
    },
  });
}

/**
 * A prompt-cache breakpoint: carried to an Anthropic model on the part it marks, with its `ttl`,
 * held at the cache-write price of its lifetime (the one-hour price when any breakpoint asks one
 * hour), billed by the classes Anthropic reports (docs/surfaces.md); other providers cache by
 * themselves and do not get it.
 */
const cacheControl = closedObject({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() }).nullish();

const textBlock = closedObject({
  type: z.literal('text'),
  text: z.string(),
  cache_control: cacheControl,
  /** Citations a previous answer carried; the text is kept, the citations are not read. */
  citations: z.array(z.unknown()).nullish(),
});

const imageSource = blockUnion(
  'an image source',
  [
    closedObject({
      type: z.literal('base64'),
      media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']),
      data: z.string(),
    }),
    closedObject({ type: z.literal('url'), url: z.string() }),
  ],
  { file: 'files uploaded to the Files API are not reachable through the gateway' },
);
const imageBlock = closedObject({ type: z.literal('image'), source: imageSource, cache_control: cacheControl });

const documentSource = blockUnion(
  'a document source',
  [
    closedObject({ type: z.literal('text'), media_type: z.literal('text/plain'), data: z.string() }),
    closedObject({ type: z.literal('content'), content: z.union([z.string(), z.array(z.union([textBlock, imageBlock]))]) }),
  ],
  {
    base64: 'PDF documents cannot be bounded before the call (send their text instead)',
    url: 'PDF documents cannot be bounded before the call (send their text instead)',
    file: 'files uploaded to the Files API are not reachable through the gateway',
  },
);
const documentBlock = closedObject({
  type: z.literal('document'),
  source: documentSource,
  title: z.string().nullish(),
  context: z.string().nullish(),
  citations: closedObject({
    enabled: z.literal(false, { error: 'citations cannot be returned by the translation: leave them disabled' }).optional(),
  }).nullish(),
  cache_control: cacheControl,
});

const toolUseBlock = closedObject({
  type: z.literal('tool_use'),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
  cache_control: cacheControl,
});

const toolResultBlock = closedObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1),
  content: stringOrBlocks(blockUnion('a tool_result part', [textBlock, imageBlock, documentBlock])).optional(),
  is_error: z.boolean().optional(),
  cache_control: cacheControl,
});

/**
 * Thinking from earlier turns travels with its turn (chat's `thinking_blocks`) to an Anthropic model,
 * which checks the signatures and needs the last turn's thinking in a tool loop; other providers
 * cannot check them and do not get them (accepted-fields.ts).
 */
const thinkingBlock = closedObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string().optional() });
const redactedThinkingBlock = closedObject({ type: z.literal('redacted_thinking'), data: z.string() });

const serverBlockReasons = {
  server_tool_use: "server tools run on the provider's side and are not served",
  web_search_tool_result: "server tools run on the provider's side and are not served",
  web_fetch_tool_result: "server tools run on the provider's side and are not served",
  code_execution_tool_result: "server tools run on the provider's side and are not served",
  mcp_tool: "MCP connector calls run on the provider's side and are not metered",
  container_upload: 'code execution containers are not served',
  search_result: 'search result blocks are not carried by the translation',
};

export const contentBlockSchema = blockUnion(
  'a content block',
  [textBlock, imageBlock, documentBlock, toolUseBlock, toolResultBlock, thinkingBlock, redactedThinkingBlock],
  serverBlockReasons,
);

export type MessagesContentBlock = z.infer<typeof contentBlockSchema>;

export const messagesMessageSchema = closedObject({
  role: z.enum(['user', 'assistant']),
  content: stringOrBlocks(contentBlockSchema),
});

export type MessagesMessage = z.infer<typeof messagesMessageSchema>;

const customTool = closedObject({
  type: z.literal('custom').optional(),
  name: z.string().min(1).max(128),
  description: z.string().optional(),
  input_schema: z.looseObject({ type: z.literal('object') }),
  strict: z.boolean().optional(),
  cache_control: cacheControl,
  /**
   * Tool search (`advanced-tool-use-*`): the model is not shown a deferred tool until a search result
   * references it, so it is left out of the chat request; the `tool_reference` blocks that would
   * bring it in are refused with the other tool_result parts chat cannot carry.
   */
  defer_loading: z.boolean().optional(),
});

export type MessagesTool = z.infer<typeof customTool>;

/** Anthropic's own tools carry a versioned `type`; none of them can be served by a chat upstream. */
const tool = z.custom<MessagesTool>().superRefine((value, context) => {
  const type = typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
  if (type === undefined || type === 'custom') {
    const parsed = customTool.safeParse(value);
    for (const issue of parsed.error?.issues ?? []) context.addIssue({ ...issue, input: undefined });
    return;
  }
  context.addIssue({
    code: 'custom',
    message:
      typeof type === 'string'
        ? `tool type "${type}" is not served: Anthropic's server tools (web search, web fetch, code execution) run and bill on the provider's side, and its schema-less client tools (computer, bash, text editor, memory) cannot be described to other models; declare a custom tool with an input_schema instead`
        : 'a tool needs a name and an input_schema',
  });
});

const toolChoice = blockUnion('a tool_choice', [
  closedObject({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
  closedObject({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
  closedObject({ type: z.literal('tool'), name: z.string().min(1), disable_parallel_tool_use: z.boolean().optional() }),
  closedObject({ type: z.literal('none') }),
]);

/**
 * `display` only decides how much of the thinking's text is streamed (`omitted`: empty blocks whose
 * signatures still carry it; `updates`: only the short progress notes between tool calls); the
 * thinking is billed as output whatever is shown. Sent to an Anthropic model as given, but
 * `updates` as `omitted` (chat-request-of-messages.ts).
 */
const thinkingDisplay = z.enum(['summarized', 'omitted', 'updates']).optional();
const thinking = blockUnion('thinking', [
  closedObject({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1024), display: thinkingDisplay }),
  closedObject({ type: z.literal('disabled') }),
  closedObject({ type: z.literal('adaptive'), display: thinkingDisplay }),
]);

/**
 * Claude Code sends `{edits: [{type: "clear_thinking_20251015", keep: "all"}]}`: keep all earlier
 * thinking, which is what the gateway sends anyway (Anthropic itself leaves earlier turns' thinking
 * out of the context), so those edits are accepted; clearing tool uses or compacting would change
 * what the model reads and is not implemented.
 */
const contextManagement = closedObject({
  edits: z
    .array(
      z.looseObject({
        type: z.string().regex(/^clear_thinking_\d{8}$/, {
          error: 'only clear_thinking edits are accepted: clearing tool uses and compaction are not implemented by the gateway',
        }),
      }),
    )
    .optional(),
});

/** What shapes the prompt: shared by the Messages request and count_tokens. */
const promptShape = {
  model: chatCompletionsBodySchema.shape.model,
  messages: z.array(messagesMessageSchema).min(1).max(2048),
  system: z.union([z.string(), z.array(textBlock)]).optional(),
  tools: z.array(tool).max(512).optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinking.optional(),
  /** Mapped to `reasoning_effort` (`max` to `xhigh`). */
  output_config: closedObject({ effort: z.enum(['low', 'medium', 'high', 'max']).nullish() }).nullish(),
  context_management: contextManagement.nullish(),
  /** Faucet's own fields, as on the chat surface. */
  feature: chatCompletionsBodySchema.shape.feature,
  route_mode: chatCompletionsBodySchema.shape.route_mode,
};

export const messagesRequestSchema = closedObject({
  ...promptShape,
  max_tokens: z.number({ error: 'max_tokens is required' }).int().positive(),
  stop_sequences: z
    .array(z.string())
    .max(4, { error: 'at most 4 stop_sequences are accepted: the chat pipeline carries no more' })
    .optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  /** Ignored: a tag for the provider's abuse detection, which changes neither answer nor price; the session already names the end user. */
  metadata: closedObject({ user_id: z.string().max(1024).nullish() }).nullish(),
  stream: z.boolean().optional(),
  /** Ignored: no tier is sent upstream, so the call runs on the provider's standard tier, the one the catalog prices. */
  service_tier: z.enum(['auto', 'standard_only']).optional(),
});

export type MessagesRequest = z.infer<typeof messagesRequestSchema>;

/** `POST /v1/messages/count_tokens`: the prompt-shaping fields of a Messages request, no generation settings. */
export const countTokensRequestSchema = closedObject(promptShape);

export type CountTokensRequest = z.infer<typeof countTokensRequestSchema>;

/** The body of `POST /v1/messages`, or a 400 naming what is refused and why. */
export function parseMessagesRequest(value: unknown): MessagesRequest {
  const parsed = messagesRequestSchema.safeParse(value);
  if (!parsed.success) throw new FaucetError('invalid_request', describeZodError(parsed.error));
  return parsed.data;
}

/** The body of `POST /v1/messages/count_tokens`, or a 400. */
export function parseCountTokensRequest(value: unknown): CountTokensRequest {
  const parsed = countTokensRequestSchema.safeParse(value);
  if (!parsed.success) throw new FaucetError('invalid_request', describeZodError(parsed.error));
  return parsed.data;
}
