/**
 * The built-in `mock` provider: no network, no key, deterministic. Every answer is counted by the
 * deterministic tokenizer, so the same request always yields the same text (or tool call) and the
 * same usage; ids are random, as a provider's are. `MOCK_PROVIDER_LATENCY_MS` delays the answer (or
 * the first chunk) to stand in for a real upstream's think time.
 *
 * - `echo` answers with the last user message, quoted back (`Echo: …`).
 * - `tools` drives one round of function calling, so agent clients can be tested end to end:
 *   - the request has tools (and `tool_choice` is not `none`) and its last message is not a tool
 *     result: it calls the tool `tool_choice` names, else the first one, once (finish_reason
 *     `tool_calls`). The arguments are built from that tool's JSON schema, valid against a strict
 *     (or plain) schema of the keywords read here: each required property gets a value (strings the
 *     last word of the last user message, numbers and integers 1, booleans true, `null` where only
 *     null fits, enums and consts their first value, `anyOf` its first non-null branch, arrays their
 *     `minItems` elements, objects recursively); optional properties are left out; `$ref`, string
 *     formats and patterns and number bounds are not read. Its tokens are the tool's name and the
 *     arguments, as the prompt counts a tool call;
 *   - the last message is a tool result: it answers `Tool result: <that result>`;
 *   - otherwise it answers as `echo` does.
 */
import { FaucetError } from '#shared/wire/errors.ts';
import type { ChatCompletion, ChatCompletionChunk, ChatMessage, ChatRequest, ChatUsage } from '../../openai/chat-schemas.ts';
import { countPromptTokens, messageText } from '../../tokens/count-prompt-tokens.ts';
import { countTokens, tokenize } from '../../tokens/tokenize.ts';
import { outputTokenCap } from '#shared/providers/provider-catalog.ts';
import type { ProviderAdapter, ProviderContext } from '../provider.ts';

export const mockModels = ['echo', 'tools'] as const;

interface MockAnswer {
  /** The answer's text, or the tool call's arguments, one token each (cut at the output limit). */
  tokens: string[];
  /** The tool called, when the answer is a tool call. */
  toolCall: { id: string; name: string } | null;
  finishReason: 'stop' | 'length' | 'tool_calls';
  usage: ChatUsage;
}

/** The text `mock:echo` answers: the last user message, quoted back. */
export function echoText(request: ChatRequest): string {
  const lastUser = request.messages.findLast((message) => message.role === 'user');
  const said = lastUser === undefined ? '' : messageText(lastUser).trim();
  return said === '' ? 'Echo: (no user message)' : `Echo: ${said}`;
}

/** What `mock:tools` does with a request (see the file header): call a tool, or answer text. */
function toolsTurn(request: ChatRequest): { call: { name: string; arguments: string } } | { text: string } {
  const last = request.messages.at(-1);
  if (last?.role === 'tool') return { text: `Tool result: ${messageText(last).trim()}` };
  const tools = request.tools ?? [];
  if (tools.length === 0 || request.tool_choice === 'none') return { text: echoText(request) };
  const named = typeof request.tool_choice === 'object' ? request.tool_choice.function.name : undefined;
  const tool = tools.find((candidate) => candidate.function.name === named) ?? tools[0]!;
  const word = lastWordOf(request.messages);
  const parameters = tool.function.parameters ?? { type: 'object', properties: {} };
  return { call: { name: tool.function.name, arguments: JSON.stringify(sampleOf(parameters, word)) } };
}

function lastWordOf(messages: ChatMessage[]): string {
  const lastUser = messages.findLast((message) => message.role === 'user');
  const words = lastUser === undefined ? [] : messageText(lastUser).match(/[\p{L}\p{N}]+/gu);
  return words?.at(-1) ?? 'mock';
}

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, unknown>;
  required?: string[];
  items?: unknown;
  minItems?: number;
  enum?: unknown[];
  const?: unknown;
  anyOf?: unknown[];
}

/** A value valid against `schema`, with `word` for every string (see the file header). */
function sampleOf(schema: unknown, word: string): unknown {
  if (typeof schema !== 'object' || schema === null) return word;
  const { type, properties = {}, required = [], items, minItems = 0, enum: values, const: constant, anyOf } = schema as JsonSchema;
  if (constant !== undefined) return constant;
  if (values !== undefined && values.length > 0) return values[0];
  if (anyOf !== undefined && anyOf.length > 0) {
    const notNull = anyOf.find((branch) => (branch as JsonSchema).type !== 'null');
    return sampleOf(notNull ?? anyOf[0], word);
  }
  const types = type === undefined ? [] : Array.isArray(type) ? type : [type];
  const chosen = types.find((name) => name !== 'null') ?? types[0] ?? (Object.hasOwn(schema, 'properties') ? 'object' : 'string');
  switch (chosen) {
    case 'object':
      return Object.fromEntries(
        required.filter((key) => Object.hasOwn(properties, key)).map((key) => [key, sampleOf(properties[key], word)]),
      );
    case 'array':
      return Array.from({ length: minItems }, () => sampleOf(items, word));
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return word;
  }
}

function answer(request: ChatRequest, context: ProviderContext): MockAnswer {
  if (!(mockModels as readonly string[]).includes(request.model)) {
    throw new FaucetError('invalid_request', `The mock provider has no model "${request.model}"; use mock:echo or mock:tools.`);
  }
  const limit = request.max_completion_tokens ?? request.max_tokens ?? outputTokenCap('mock', request.model, context.priceCatalog);
  const turn: ReturnType<typeof toolsTurn> = request.model === 'tools' ? toolsTurn(request) : { text: echoText(request) };
  const promptTokens = countPromptTokens(request.messages, request.tools);
  if ('text' in turn) {
    const all = tokenize(turn.text);
    const tokens = all.slice(0, limit);
    return {
      tokens,
      toolCall: null,
      finishReason: tokens.length < all.length ? 'length' : 'stop',
      usage: { prompt_tokens: promptTokens, completion_tokens: tokens.length, total_tokens: promptTokens + tokens.length },
    };
  }
  const nameTokens = countTokens(turn.call.name);
  const all = tokenize(turn.call.arguments);
  const tokens = all.slice(0, Math.max(0, limit - nameTokens));
  const completionTokens = Math.min(limit, nameTokens + tokens.length);
  return {
    tokens,
    toolCall: { id: `call_mock_${crypto.randomUUID().replaceAll('-', '')}`, name: turn.call.name },
    finishReason: tokens.length < all.length ? 'length' : 'tool_calls',
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  };
}

export function createMockAdapter(context: ProviderContext): ProviderAdapter {
  return {
    async complete(call) {
      const result = answer(call.request, context);
      await pause(context.mockLatencyMs, call.signal);
      const text = result.tokens.join('');
      const message: ChatCompletion['choices'][number]['message'] =
        result.toolCall === null
          ? { role: 'assistant', content: text }
          : {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: result.toolCall.id, type: 'function', function: { name: result.toolCall.name, arguments: text } }],
            };
      const completion: ChatCompletion = {
        id: `chatcmpl-mock-${crypto.randomUUID()}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: call.request.model,
        choices: [{ index: 0, message, finish_reason: result.finishReason }],
        usage: result.usage,
      };
      return completion;
    },

    async stream(call) {
      const result = answer(call.request, context);
      await pause(context.mockLatencyMs, call.signal);
      return mockChunks(result, call.request.model);
    },
  };
}

/** One chunk per token, as OpenAI streams them: a tool call opens with its id and name, then its arguments arrive in pieces. */
async function* mockChunks(result: MockAnswer, model: string): AsyncGenerator<ChatCompletionChunk> {
  const base = {
    id: `chatcmpl-mock-${crypto.randomUUID()}`,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model,
  };
  const { toolCall } = result;
  if (toolCall === null) {
    yield { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] };
    for (const token of result.tokens) {
      yield { ...base, choices: [{ index: 0, delta: { content: token }, finish_reason: null }] };
    }
  } else {
    const opening = { index: 0, id: toolCall.id, type: 'function', function: { name: toolCall.name, arguments: '' } };
    yield { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: null, tool_calls: [opening] }, finish_reason: null }] };
    for (const token of result.tokens) {
      yield {
        ...base,
        choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: token } }] }, finish_reason: null }],
      };
    }
  }
  yield { ...base, choices: [{ index: 0, delta: {}, finish_reason: result.finishReason }] };
  yield { ...base, choices: [], usage: result.usage };
}

function pause(milliseconds: number, signal: AbortSignal | undefined): Promise<void> {
  if (milliseconds <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, milliseconds);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new FaucetError('upstream_error', 'The call was cancelled before the upstream finished.'));
      },
      { once: true },
    );
  });
}
