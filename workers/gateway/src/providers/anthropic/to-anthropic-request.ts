/**
 * OpenAI chat request → Anthropic Messages request. System and developer messages become the
 * top-level `system`; tool calls become `tool_use` blocks and tool answers `tool_result` blocks in
 * a user turn; consecutive turns of one role are merged, because Anthropic wants them alternating.
 */
import { FaucetError } from '#shared/wire/errors.ts';
import type { CacheControl, ChatMessage, ChatRequest, Thinking } from '../../openai/chat-schemas.ts';
import { messageText } from '../../tokens/count-prompt-tokens.ts';

type AnthropicBlock = Record<string, unknown> & { type: string };
interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: AnthropicBlock[];
}

export interface AnthropicRequest {
  model: string;
  max_tokens: number;
  messages: AnthropicMessage[];
  system?: string | AnthropicBlock[];
  stream?: boolean;
  temperature?: number;
  top_p?: number;
  stop_sequences?: string[];
  tools?: Array<{ name: string; description?: string; input_schema: Record<string, unknown>; cache_control?: AnthropicCacheControl }>;
  tool_choice?: Record<string, unknown>;
  metadata?: { user_id: string };
  thinking?: Thinking;
}

/** The thinking budget of each `reasoning_effort` (Claude Code's 31,999 is `high` read the other way). */
const budgetOfEffort: Record<string, number> = { minimal: 1024, low: 2048, medium: 8192, high: 16_384, xhigh: 31_999 };
/** Anthropic's smallest budget; the budget must stay below `max_tokens`, which counts thinking. */
const smallestBudget = 1024;

type AnthropicCacheControl = { type: 'ephemeral'; ttl?: '5m' | '1h' };

/**
 * A cache breakpoint as Anthropic is sent it: as the client set it, its `ttl` (five minutes, or one
 * hour) included. Each write is priced by its lifetime (the catalog's `cache_write_mtok` and
 * `cache_write_1h_mtok`), and the hold prices the prompt at the dearer write when one breakpoint is
 * of an hour (metering/hold-bounds.ts). The `ttl` is generally available: no beta header is sent.
 */
function anthropicCacheControl(cacheControl: CacheControl): AnthropicCacheControl {
  return cacheControl.ttl === undefined ? { type: 'ephemeral' } : { type: 'ephemeral', ttl: cacheControl.ttl };
}

function breakpoint(part: { cache_control?: CacheControl }): { cache_control?: AnthropicCacheControl } {
  return part.cache_control === undefined ? {} : { cache_control: anthropicCacheControl(part.cache_control) };
}

export function toAnthropicRequest(request: ChatRequest, defaultMaxTokens: number): AnthropicRequest {
  const system: AnthropicBlock[] = [];
  const messages: AnthropicMessage[] = [];
  const append = (role: AnthropicMessage['role'], blocks: AnthropicBlock[]) => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };

  for (const message of request.messages) {
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...systemBlocks(message));
        break;
      case 'user':
        append('user', userBlocks(message));
        break;
      case 'assistant':
        append('assistant', assistantBlocks(message));
        break;
      case 'tool': {
        // The tool's parts become one block: it carries the last breakpoint among them (a breakpoint caches up to its end).
        const marked = Array.isArray(message.content) ? message.content.findLast((part) => part.cache_control !== undefined) : undefined;
        const result = { type: 'tool_result', tool_use_id: message.tool_call_id ?? '', content: messageText(message) };
        append('user', [{ ...result, ...breakpoint(marked ?? {}) }]);
        break;
      }
      case 'function':
        throw new FaucetError('invalid_request', 'Messages with role "function" are deprecated; use "tool" messages.');
    }
  }
  if (messages.length === 0) throw new FaucetError('invalid_request', 'Anthropic models need at least one user or assistant message.');

  const translated: AnthropicRequest = {
    model: request.model,
    max_tokens: request.max_completion_tokens ?? request.max_tokens ?? defaultMaxTokens,
    messages,
  };
  if (system.length > 0) {
    // Blocks only where a breakpoint needs them; otherwise the one string the prompt always was.
    translated.system = system.some((block) => block.cache_control !== undefined) ? system : system.map((block) => block.text).join('\n\n');
  }
  if (request.stream) translated.stream = true;
  if (typeof request.temperature === 'number') translated.temperature = Math.min(request.temperature, 1);
  if (typeof request.top_p === 'number') translated.top_p = request.top_p;
  if (request.stop != null) translated.stop_sequences = typeof request.stop === 'string' ? [request.stop] : request.stop;
  if (request.tools !== undefined && request.tools.length > 0) {
    translated.tools = request.tools.map((tool) => ({
      name: tool.function.name,
      ...(tool.function.description === undefined ? {} : { description: tool.function.description }),
      input_schema: tool.function.parameters ?? { type: 'object', properties: {} },
      ...breakpoint(tool),
    }));
  }
  const toolChoice = anthropicToolChoice(request);
  if (toolChoice !== undefined) translated.tool_choice = toolChoice;
  if (request.user !== undefined) translated.metadata = { user_id: request.user };
  const thinking = anthropicThinking(request, translated.max_tokens);
  if (thinking !== undefined) translated.thinking = thinking;
  return translated;
}

/**
 * The request's own `thinking`, else its `reasoning_effort` as a budget (`none` thinks not). A
 * budget is kept below `max_tokens` (the feature's cap may have lowered it since the client chose
 * the budget); when no budget of at least 1,024 fits, the call is refused rather than sent without
 * the thinking it asked for.
 */
function anthropicThinking(request: ChatRequest, maxTokens: number): AnthropicRequest['thinking'] {
  const asked =
    request.thinking ??
    (request.reasoning_effort == null || request.reasoning_effort === 'none'
      ? undefined
      : { type: 'enabled' as const, budget_tokens: budgetOfEffort[request.reasoning_effort] ?? smallestBudget });
  if (asked?.type !== 'enabled') return asked;
  const budget = Math.min(asked.budget_tokens, maxTokens - 1);
  if (budget < smallestBudget) {
    throw new FaucetError(
      'invalid_request',
      `thinking needs a max_tokens above ${smallestBudget} on Anthropic models (the call may produce ${maxTokens}).`,
    );
  }
  return { ...asked, budget_tokens: budget };
}

function anthropicToolChoice(request: ChatRequest): Record<string, unknown> | undefined {
  const choice = request.tool_choice;
  const disableParallel = request.parallel_tool_calls === false ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined) return request.parallel_tool_calls === false ? { type: 'auto', ...disableParallel } : undefined;
  if (choice === 'none') return { type: 'none' };
  if (choice === 'auto') return { type: 'auto', ...disableParallel };
  if (choice === 'required') return { type: 'any', ...disableParallel };
  return { type: 'tool', name: choice.function.name, ...disableParallel };
}

/** A system message as text blocks, each keeping its breakpoint. */
function systemBlocks(message: ChatMessage): AnthropicBlock[] {
  if (!Array.isArray(message.content)) return [{ type: 'text', text: messageText(message) }];
  return message.content.flatMap((part) => (part.type === 'text' ? [{ type: 'text', text: part.text, ...breakpoint(part) }] : []));
}

function userBlocks(message: ChatMessage): AnthropicBlock[] {
  if (typeof message.content === 'string') return [{ type: 'text', text: message.content }];
  if (!Array.isArray(message.content)) return [];
  return message.content.map((part): AnthropicBlock => {
    if (part.type === 'text' && typeof part.text === 'string') return { type: 'text', text: part.text, ...breakpoint(part) };
    if (part.type === 'image_url') return { ...imageBlock(part.image_url), ...breakpoint(part) };
    throw new FaucetError('invalid_request', `Content parts of type "${part.type}" are not supported for Anthropic models.`);
  });
}

function imageBlock(imageUrl: unknown): AnthropicBlock {
  const url = typeof imageUrl === 'object' && imageUrl !== null ? (imageUrl as { url?: unknown }).url : undefined;
  if (typeof url !== 'string') throw new FaucetError('invalid_request', 'An image_url part needs an image_url.url.');
  const dataUrl = /^data:(image\/[a-z+.-]+);base64,(.*)$/s.exec(url);
  if (dataUrl !== null) return { type: 'image', source: { type: 'base64', media_type: dataUrl[1], data: dataUrl[2] } };
  // Anthropic fetches the image itself; the gateway never does.
  return { type: 'image', source: { type: 'url', url } };
}

/** The turn's thinking first, as Anthropic wrote it (it checks the signatures), then text, then tool calls. */
function assistantBlocks(message: ChatMessage): AnthropicBlock[] {
  const blocks: AnthropicBlock[] = (message.thinking_blocks ?? []).map((block) => ({ ...block }));
  if (Array.isArray(message.content) && message.content.some((part) => part.cache_control !== undefined)) {
    for (const part of message.content) if (part.type === 'text') blocks.push({ type: 'text', text: part.text, ...breakpoint(part) });
  } else {
    const text = messageText(message);
    if (text !== '') blocks.push({ type: 'text', text });
  }
  for (const call of message.tool_calls ?? []) {
    blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input: parseToolArguments(call.function.arguments) });
  }
  return blocks;
}

function parseToolArguments(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new FaucetError('invalid_request', 'A tool call in the conversation has arguments that are not JSON.');
  }
}
