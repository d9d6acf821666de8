/**
 * What each provider protocol may send upstream: the allow-list. The request schema already refuses
 * fields the gateway does not know; this refuses known fields a protocol cannot carry (the Anthropic
 * mapping has no place for `seed` or `response_format`; Mistral answers 422 to a field it does not
 * know), before any hold is placed, and is the
 * list an adapter builds its upstream body from, so a field added to the schema later cannot reach
 * a provider until someone adds it here.
 */
import { FaucetError } from '#shared/wire/errors.ts';
import type { ChatMessage, ChatRequest, Thinking } from '../openai/chat-schemas.ts';
import {
  isProviderName,
  providerCatalog,
  type OpenAiDialect,
  type ProviderEntry,
  type ProviderName,
  type ProviderProtocol,
} from '#shared/providers/provider-catalog.ts';

interface AcceptedFields {
  request: ReadonlyArray<keyof ChatRequest>;
  message: ReadonlyArray<keyof ChatMessage>;
  roles: ReadonlyArray<ChatMessage['role']>;
}

const openAiCompatible: AcceptedFields = {
  request: [
    'model',
    'messages',
    'stream',
    'stream_options',
    'max_tokens',
    'max_completion_tokens',
    'n',
    'temperature',
    'top_p',
    'stop',
    'frequency_penalty',
    'presence_penalty',
    'seed',
    'logit_bias',
    'logprobs',
    'top_logprobs',
    'response_format',
    'reasoning_effort',
    'verbosity',
    'tools',
    'tool_choice',
    'parallel_tool_calls',
    'functions',
    'function_call',
    'user',
    'safety_identifier',
    'service_tier',
    'store',
    'modalities',
  ],
  message: ['role', 'content', 'name', 'tool_calls', 'tool_call_id', 'function_call', 'refusal'],
  roles: ['system', 'developer', 'user', 'assistant', 'tool', 'function'],
};

/** The fields `to-anthropic-request.ts` maps; anything else would be dropped silently, so it is refused. */
const anthropic: AcceptedFields = {
  request: [
    'model',
    'messages',
    'stream',
    'stream_options',
    'max_tokens',
    'max_completion_tokens',
    'n',
    'temperature',
    'top_p',
    'stop',
    'tools',
    'tool_choice',
    'parallel_tool_calls',
    'user',
    'reasoning_effort',
    'thinking',
  ],
  message: ['role', 'content', 'tool_calls', 'tool_call_id', 'thinking_blocks'],
  roles: ['system', 'developer', 'user', 'assistant', 'tool'],
};

/** The fields `gemini/to-gemini-request.ts` maps. */
const gemini: AcceptedFields = {
  request: [
    'model',
    'messages',
    'stream',
    'stream_options',
    'max_tokens',
    'max_completion_tokens',
    'n',
    'temperature',
    'top_p',
    'stop',
    'frequency_penalty',
    'presence_penalty',
    'seed',
    'response_format',
    'tools',
    'tool_choice',
  ],
  message: ['role', 'content', 'tool_calls', 'tool_call_id'],
  roles: ['system', 'developer', 'user', 'assistant', 'tool'],
};

/**
 * What most OpenAI-compatible servers take (Together, Fireworks, a custom endpoint): sampling, tools
 * and JSON output, no OpenAI-only fields (`store`, `service_tier`, `verbosity`, legacy functions).
 * `max_completion_tokens` is sent as `max_tokens`, the name they all know.
 */
const basic: AcceptedFields = {
  request: [
    'model',
    'messages',
    'stream',
    'stream_options',
    'max_tokens',
    'max_completion_tokens',
    'n',
    'temperature',
    'top_p',
    'stop',
    'frequency_penalty',
    'presence_penalty',
    'seed',
    'response_format',
    'tools',
    'tool_choice',
    'user',
  ],
  message: ['role', 'content', 'name', 'tool_calls', 'tool_call_id'],
  roles: ['system', 'user', 'assistant', 'tool'],
};

/** Mistral refuses unknown fields (422); `seed` goes out as its `random_seed`, and it streams usage unasked. */
const mistral: AcceptedFields = {
  request: [
    'model',
    'messages',
    'stream',
    'max_tokens',
    'max_completion_tokens',
    'n',
    'temperature',
    'top_p',
    'stop',
    'frequency_penalty',
    'presence_penalty',
    'seed',
    'response_format',
    'tools',
    'tool_choice',
    'parallel_tool_calls',
  ],
  message: ['role', 'content', 'name', 'tool_calls', 'tool_call_id'],
  roles: ['system', 'user', 'assistant', 'tool'],
};

/** Groq answers 400 to `logprobs`, `logit_bias`, `top_logprobs` and `messages[].name` (its docs). */
const groq: AcceptedFields = {
  request: [
    'model',
    'messages',
    'stream',
    'stream_options',
    'max_tokens',
    'max_completion_tokens',
    'n',
    'temperature',
    'top_p',
    'stop',
    'frequency_penalty',
    'presence_penalty',
    'seed',
    'response_format',
    'reasoning_effort',
    'tools',
    'tool_choice',
    'parallel_tool_calls',
    'user',
  ],
  message: ['role', 'content', 'tool_calls', 'tool_call_id'],
  roles: ['system', 'user', 'assistant', 'tool'],
};

/** DeepSeek's chat API: no `seed`, `n`, `user` or `logit_bias`. */
const deepseek: AcceptedFields = {
  request: [
    'model',
    'messages',
    'stream',
    'stream_options',
    'max_tokens',
    'max_completion_tokens',
    'temperature',
    'top_p',
    'stop',
    'frequency_penalty',
    'presence_penalty',
    'logprobs',
    'top_logprobs',
    'response_format',
    'tools',
    'tool_choice',
  ],
  message: ['role', 'content', 'name', 'tool_calls', 'tool_call_id'],
  roles: ['system', 'user', 'assistant', 'tool'],
};

const fieldSets: Record<OpenAiDialect['fields'], AcceptedFields> = { openai: openAiCompatible, basic, mistral, groq, deepseek };

export const acceptedFields: Record<ProviderProtocol, AcceptedFields> = {
  openai_compatible: openAiCompatible,
  anthropic,
  gemini,
  // The mock stands in for an OpenAI-compatible upstream in development and tests.
  mock: openAiCompatible,
};

/** The allow-list of one provider: its protocol's, narrowed by its dialect for OpenAI-compatible upstreams. */
function acceptedFor(protocol: ProviderProtocol, provider: string): AcceptedFields {
  const dialect = isProviderName(provider) ? dialectOf(provider) : undefined;
  return protocol === 'openai_compatible' && dialect !== undefined ? fieldSets[dialect.fields] : acceptedFields[protocol];
}

function dialectOf(provider: ProviderName): OpenAiDialect | undefined {
  const entry: ProviderEntry = providerCatalog[provider];
  return entry.dialect;
}

/**
 * The request as `protocol` receives it. Anthropic's own fields stay Anthropic's: any other protocol
 * gets `thinking` as `reasoning_effort` (its budget in three bands, unless an effort was given), never
 * earlier `thinking_blocks`, whose signatures only Anthropic can check (the model still reads the
 * turn's text and tool calls), and no `cache_control` breakpoints (those providers cache by
 * themselves). Applied before the fields are checked and the hold bounded.
 */
export function requestForProtocol(protocol: ProviderProtocol, request: ChatRequest): ChatRequest {
  if (protocol === 'anthropic' || !hasAnthropicFields(request)) return request;
  const { thinking, ...rest } = request;
  const effort = rest.reasoning_effort ?? effortOfThinking(thinking);
  const tools = rest.tools?.map(({ cache_control: _breakpoint, ...tool }) => tool);
  return {
    ...rest,
    ...(effort === undefined ? {} : { reasoning_effort: effort }),
    ...(tools === undefined ? {} : { tools }),
    messages: rest.messages.map(({ thinking_blocks: _earlier, ...message }) =>
      Array.isArray(message.content)
        ? { ...message, content: message.content.map(({ cache_control: _breakpoint, ...part }) => part) }
        : message,
    ),
  };
}

function hasAnthropicFields(request: ChatRequest): boolean {
  if (request.thinking !== undefined) return true;
  if (request.tools?.some((tool) => tool.cache_control !== undefined)) return true;
  return request.messages.some(
    (message) =>
      message.thinking_blocks !== undefined ||
      (Array.isArray(message.content) && message.content.some((part) => part.cache_control !== undefined)),
  );
}

/**
 * Whether a request asks Anthropic to write its prompt cache, and for how long at most: `1h` when a
 * breakpoint asks one hour (its input may then be billed at the one-hour write price), `5m` when
 * every breakpoint is of the default five minutes (at the cache-write price), null without any.
 */
export type CacheLifetime = '5m' | '1h';

export function longestCacheLifetime(request: ChatRequest): CacheLifetime | null {
  const breakpoints = [
    ...(request.tools ?? []).map((tool) => tool.cache_control),
    ...request.messages.flatMap((message) => (Array.isArray(message.content) ? message.content.map((part) => part.cache_control) : [])),
  ].filter((breakpoint) => breakpoint !== undefined);
  if (breakpoints.length === 0) return null;
  return breakpoints.some((breakpoint) => breakpoint.ttl === '1h') ? '1h' : '5m';
}

/** A thinking budget as an effort: under 4,096 `low`, under 16,384 `medium`, else `high`; adaptive is `medium`. */
export function effortOfThinking(thinking: Thinking | undefined): ChatRequest['reasoning_effort'] | undefined {
  if (thinking === undefined || thinking.type === 'disabled') return undefined;
  if (thinking.type === 'adaptive') return 'medium';
  if (thinking.budget_tokens < 4096) return 'low';
  return thinking.budget_tokens < 16_384 ? 'medium' : 'high';
}

/** Throws 400 naming the first field (or role) of `request` that `protocol` may not send; null counts as absent. */
export function refuseUnacceptedFields(protocol: ProviderProtocol, provider: string, request: ChatRequest): void {
  const accepted = acceptedFor(protocol, provider);
  const extra = presentKeys(request).find((key) => !(accepted.request as readonly string[]).includes(key));
  if (extra !== undefined) throw new FaucetError('invalid_request', `field "${extra}" is not accepted for ${provider} models.`);
  request.messages.forEach((message, index) => {
    if (!accepted.roles.includes(message.role)) {
      throw new FaucetError('invalid_request', `messages[${index}]: role "${message.role}" is not accepted for ${provider} models.`);
    }
    const field = presentKeys(message).find((key) => !(accepted.message as readonly string[]).includes(key));
    if (field !== undefined)
      throw new FaucetError('invalid_request', `messages[${index}]: field "${field}" is not accepted for ${provider} models.`);
  });
}

/** The upstream copy of `request` with only the fields `protocol` (and `dialect`) may send, at both levels. */
export function pickAcceptedFields(protocol: ProviderProtocol, request: ChatRequest, dialect?: OpenAiDialect): ChatRequest {
  const accepted = protocol === 'openai_compatible' && dialect !== undefined ? fieldSets[dialect.fields] : acceptedFields[protocol];
  const messages = request.messages.map((message) => pick(message, accepted.message));
  return { ...pick(request, accepted.request), messages };
}

function presentKeys(value: object): string[] {
  return Object.entries(value)
    .filter(([, field]) => field != null)
    .map(([key]) => key);
}

function pick<T extends object>(value: T, keys: ReadonlyArray<keyof T>): T {
  const picked: Partial<T> = {};
  for (const key of keys) if (value[key] !== undefined) picked[key] = value[key];
  return picked as T;
}
