/**
 * The gateway's chat completion → an Anthropic Message, the mirror image of the anthropic adapter's
 * `from-anthropic-response.ts`. The `faucet` object the completion carries stays a top-level field,
 * which Anthropic's SDK passes through untouched.
 */
import type { ChatCompletion, ChatUsage } from '../../openai/chat-schemas.ts';
import type { FaucetObject } from '../../metering/faucet-object.ts';

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  /** The cache writes by lifetime, as Anthropic reports them: only when the provider told them apart. */
  cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}

export type MessageContentBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown };

export interface Message {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: MessageContentBlock[];
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: MessagesUsage;
  faucet?: FaucetObject;
}

/** The gateway's id of the call (`x-faucet-call-id`), which names the message. */
export interface MessageIds {
  callId: string;
}

export function messageIdOf(ids: MessageIds): string {
  return `msg_${ids.callId}`;
}

/**
 * OpenAI's `prompt_tokens` includes cache reads (`cached_tokens`) and, from adapters whose provider
 * bills them, cache writes (`cache_write_tokens`); Anthropic's `input_tokens` excludes both. Parts
 * larger than what is left of the prompt are clamped as metering clamps them (metered-usage.ts), so
 * the three input counts always add up to the prompt tokens billed. Where the adapter told the
 * one-hour writes apart (`cache_write_1h_tokens`), the writes are split again into Anthropic's
 * `cache_creation`, clamped the same way.
 */
export function messagesUsageOf(usage: ChatUsage): MessagesUsage {
  let left = usage.prompt_tokens;
  const take = (count: number | null | undefined): number => {
    const taken = Math.min(count ?? 0, left);
    left -= taken;
    return taken;
  };
  const cacheRead = take(usage.prompt_tokens_details?.cached_tokens);
  const cacheWrite = take(usage.prompt_tokens_details?.cache_write_tokens);
  const oneHour = usage.prompt_tokens_details?.cache_write_1h_tokens;
  const split =
    typeof oneHour === 'number'
      ? {
          cache_creation: {
            ephemeral_5m_input_tokens: cacheWrite - Math.min(oneHour, cacheWrite),
            ephemeral_1h_input_tokens: Math.min(oneHour, cacheWrite),
          },
        }
      : {};
  return {
    input_tokens: left,
    output_tokens: usage.completion_tokens,
    cache_creation_input_tokens: cacheWrite,
    cache_read_input_tokens: cacheRead,
    ...split,
  };
}

/** Without the provider's usage: the counts the call was booked at (the `faucet` object), else none. */
export function messagesUsageOrBooked(usage: ChatUsage | null | undefined, faucet: FaucetObject | undefined): MessagesUsage {
  if (usage != null) return messagesUsageOf(usage);
  return {
    input_tokens: faucet?.input_tokens ?? 0,
    output_tokens: faucet?.output_tokens ?? 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
}

/**
 * OpenAI's `stop` covers both a natural end and a stop sequence, and says not which sequence:
 * it reads as `end_turn`. A stop with tool calls is `tool_use` (some upstreams say `stop` there).
 */
export function stopReasonOf(finishReason: string | null | undefined, hasToolUse: boolean): StopReason | null {
  switch (finishReason) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    case null:
    case undefined:
      return hasToolUse ? 'tool_use' : null;
    default:
      return hasToolUse ? 'tool_use' : 'end_turn';
  }
}

/**
 * Tool arguments are JSON text in chat and an object in Anthropic's reply. Text that is not JSON (an
 * answer cut at max_tokens) is handed over as it came, for the client's own validation to refuse,
 * rather than replaced by an input the model never wrote.
 */
export function toolInputOf(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * The reasoning text some OpenAI-compatible upstreams send beside the content (`reasoning_content`
 * from DeepSeek and vLLM, `reasoning` from OpenRouter and Groq). Chat's schema keeps unknown fields,
 * so it reaches here when the upstream sent it.
 */
export function reasoningTextOf(part: Record<string, unknown>): string {
  const text = part.reasoning_content ?? part.reasoning;
  return typeof text === 'string' ? text : '';
}

/**
 * An answer's thinking: Anthropic's own blocks with their signatures (its adapter hands them over
 * as `thinking_blocks`), else another provider's reasoning text as one block without a signature,
 * since there is none to give for thinking Anthropic did not write.
 */
function thinkingBlocksOf(message: Record<string, unknown>): MessageContentBlock[] {
  const blocks = Array.isArray(message.thinking_blocks) ? (message.thinking_blocks as Array<Record<string, unknown>>) : [];
  const kept = blocks.flatMap((block): MessageContentBlock[] => {
    if (block.type === 'thinking') return [{ type: 'thinking', thinking: stringOf(block.thinking), signature: stringOf(block.signature) }];
    if (block.type === 'redacted_thinking') return [{ type: 'redacted_thinking', data: stringOf(block.data) }];
    return [];
  });
  if (kept.length > 0) return kept;
  const thinking = reasoningTextOf(message);
  return thinking === '' ? [] : [{ type: 'thinking', thinking, signature: '' }];
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

export function messageOfChatCompletion(completion: ChatCompletion & { faucet?: FaucetObject }, ids: MessageIds): Message {
  const choice = completion.choices[0];
  const content: MessageContentBlock[] = [];
  if (choice !== undefined) content.push(...thinkingBlocksOf(choice.message));
  const text = choice?.message.content ?? choice?.message.refusal ?? '';
  if (text !== '') content.push({ type: 'text', text });
  for (const call of choice?.message.tool_calls ?? []) {
    content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolInputOf(call.function.arguments) });
  }
  const hasToolUse = content.some((block) => block.type === 'tool_use');
  const stopReason = choice?.message.refusal ? 'refusal' : stopReasonOf(choice?.finish_reason, hasToolUse);
  return {
    id: messageIdOf(ids),
    type: 'message',
    role: 'assistant',
    model: completion.model,
    content,
    stop_reason: stopReason ?? 'end_turn',
    stop_sequence: null,
    usage: messagesUsageOrBooked(completion.usage, completion.faucet),
    ...(completion.faucet === undefined ? {} : { faucet: completion.faucet }),
  };
}
