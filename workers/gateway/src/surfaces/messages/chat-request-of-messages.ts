/**
 * A parsed Messages request → the gateway's chat request, the mirror image of the anthropic
 * adapter's `to-anthropic-request.ts`: `system` becomes a system message, `tool_use` blocks become
 * tool calls and `tool_result` blocks tool messages, `thinking` blocks the assistant turn's
 * `thinking_blocks` (signatures kept, for Anthropic to check). What chat cannot carry is refused by
 * the schema (messages-request.ts) or here, never dropped, except what is ignored there with its
 * reason (metadata). Cache breakpoints (`cache_control`) stay on the parts and tools they mark.
 */
import { FaucetError } from '#shared/wire/errors.ts';
import type { CacheControl, ChatMessage, ChatRequest } from '../../openai/chat-schemas.ts';
import type { ChatCompletionsBody } from '../../routes/chat-completions-body.ts';
import type { CountTokensRequest, MessagesContentBlock, MessagesMessage, MessagesRequest, MessagesTool } from './messages-request.ts';

type ChatPart = Exclude<ChatMessage['content'], string | null | undefined>[number];
type Block<Type extends MessagesContentBlock['type']> = Extract<MessagesContentBlock, { type: Type }>;

/**
 * The chat request the gateway pipeline runs. `max_tokens` travels as `max_completion_tokens`:
 * Anthropic's counts thinking like OpenAI's counts reasoning. Faucet's `feature` and `route_mode`
 * are kept, so the result is a whole chat-completions body.
 */
export function chatRequestOfMessages(body: MessagesRequest): ChatCompletionsBody {
  const request: ChatCompletionsBody = {
    model: body.model,
    messages: chatMessagesOfMessages(body),
    max_completion_tokens: body.max_tokens,
  };
  if (body.stream === true) request.stream = true;
  if (body.temperature !== undefined) request.temperature = body.temperature;
  if (body.top_p !== undefined) request.top_p = body.top_p;
  if (body.stop_sequences !== undefined && body.stop_sequences.length > 0) request.stop = body.stop_sequences;
  const tools = chatToolsOf(body.tools);
  if (tools !== undefined) request.tools = tools;
  Object.assign(request, chatToolChoiceOf(body.tool_choice));
  const effort = reasoningEffortOf(body);
  if (effort !== undefined) request.reasoning_effort = effort;
  if (body.thinking !== undefined) request.thinking = chatThinkingOf(body.thinking);
  if (body.feature !== undefined) request.feature = body.feature;
  if (body.route_mode !== undefined) request.route_mode = body.route_mode;
  return request;
}

/** The chat messages of a Messages prompt, system first; shared with count_tokens. */
export function chatMessagesOfMessages(body: Pick<CountTokensRequest, 'system' | 'messages'>): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (Array.isArray(body.system) && body.system.some((block) => block.cache_control != null)) {
    // Cache breakpoints in the system prompt stay on their blocks.
    messages.push({ role: 'system', content: body.system.map((block) => withBreakpoint({ type: 'text', text: block.text }, block)) });
  } else {
    const system = typeof body.system === 'string' ? body.system : (body.system ?? []).map((block) => block.text).join('\n\n');
    if (system !== '') messages.push({ role: 'system', content: system });
  }
  body.messages.forEach((message, index) => {
    messages.push(...(message.role === 'user' ? userMessages(message, index) : assistantMessages(message, index)));
  });
  return messages;
}

/** The tools the model is shown: a deferred one (`defer_loading`) is not, until a search would load it. */
export function chatToolsOf(tools: MessagesTool[] | undefined): ChatRequest['tools'] {
  const shown = tools?.filter((tool) => tool.defer_loading !== true);
  if (shown === undefined || shown.length === 0) return undefined;
  return shown.map((tool) => ({
    type: 'function' as const,
    function: {
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parameters: tool.input_schema,
      ...(tool.strict === undefined ? {} : { strict: tool.strict }),
    },
    ...breakpointOf(tool),
  }));
}

function chatToolChoiceOf(choice: MessagesRequest['tool_choice']): Pick<ChatRequest, 'tool_choice' | 'parallel_tool_calls'> {
  if (choice === undefined) return {};
  const parallel = choice.type !== 'none' && choice.disable_parallel_tool_use === true ? { parallel_tool_calls: false } : {};
  switch (choice.type) {
    case 'auto':
      return { tool_choice: 'auto', ...parallel };
    case 'any':
      return { tool_choice: 'required', ...parallel };
    case 'tool':
      return { tool_choice: { type: 'function', function: { name: choice.name } }, ...parallel };
    case 'none':
      return { tool_choice: 'none' };
  }
}

/**
 * `output_config.effort` as `reasoning_effort` (`max` is `xhigh`). Anthropic's `thinking` travels
 * as itself: the anthropic adapter sends it as given, and the other protocols get it as an effort
 * (accepted-fields.ts), so an Anthropic model thinks within exactly the budget the client set.
 */
function reasoningEffortOf(body: Pick<MessagesRequest, 'output_config'>): ChatRequest['reasoning_effort'] {
  const effort = body.output_config?.effort;
  if (effort == null) return undefined;
  return effort === 'max' ? 'xhigh' : effort;
}

/**
 * The thinking setting as it is sent on. Display `updates` needs a beta the gateway does not send
 * upstream, so it goes as `omitted`: the reasoning stays hidden as asked, only the progress notes
 * are not shown either.
 */
function chatThinkingOf(thinking: NonNullable<MessagesRequest['thinking']>): ChatRequest['thinking'] {
  if (thinking.type === 'disabled') return thinking;
  const { display, ...setting } = thinking;
  return display === undefined ? setting : { ...setting, display: display === 'updates' ? 'omitted' : display };
}

/**
 * A user turn: its tool results first, as tool messages (Anthropic puts them first in the turn, and
 * chat wants them right after the assistant's calls), then one user message with the rest. Images a
 * tool returned follow in that user message, since chat's tool messages carry text only.
 */
function userMessages(message: MessagesMessage, index: number): ChatMessage[] {
  if (typeof message.content === 'string') return [{ role: 'user', content: message.content }];
  const toolMessages: ChatMessage[] = [];
  const parts: ChatPart[] = [];
  const toolImages: ChatPart[] = [];
  message.content.forEach((block, position) => {
    const where = `messages[${index}].content[${position}]`;
    switch (block.type) {
      case 'text':
        parts.push(withBreakpoint({ type: 'text', text: block.text }, block));
        break;
      case 'image':
        parts.push(withBreakpoint(imagePart(block), block));
        break;
      case 'document':
        parts.push(...lastWithBreakpoint(documentParts(block), block));
        break;
      case 'tool_result': {
        const result = toolResultParts(block);
        const content = block.cache_control == null ? result.text : [withBreakpoint({ type: 'text', text: result.text }, block)];
        toolMessages.push({ role: 'tool', tool_call_id: block.tool_use_id, content });
        if (result.images.length > 0)
          toolImages.push({ type: 'text', text: `Images returned by tool call ${block.tool_use_id}:` }, ...result.images);
        break;
      }
      default:
        throw new FaucetError('invalid_request', `${where}: a "${block.type}" block belongs in an assistant message.`);
    }
  });
  const userParts = [...parts, ...toolImages];
  if (userParts.length === 0) return toolMessages;
  const [only] = userParts;
  const content = userParts.length === 1 && only?.type === 'text' && only.cache_control === undefined ? only.text : userParts;
  return [...toolMessages, { role: 'user', content }];
}

/** An assistant turn: its thinking (signatures kept), its text, then its tool calls. */
function assistantMessages(message: MessagesMessage, index: number): ChatMessage[] {
  if (typeof message.content === 'string') return [{ role: 'assistant', content: message.content }];
  const texts: ChatPart[] = [];
  const toolCalls: NonNullable<ChatMessage['tool_calls']> = [];
  const thinkingBlocks: NonNullable<ChatMessage['thinking_blocks']> = [];
  message.content.forEach((block, position) => {
    switch (block.type) {
      case 'text':
        texts.push(withBreakpoint({ type: 'text', text: block.text }, block));
        break;
      case 'tool_use':
        toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input) } });
        break;
      case 'thinking':
        thinkingBlocks.push({
          type: 'thinking',
          thinking: block.thinking,
          ...(block.signature === undefined ? {} : { signature: block.signature }),
        });
        break;
      case 'redacted_thinking':
        thinkingBlocks.push({ type: 'redacted_thinking', data: block.data });
        break;
      default:
        throw new FaucetError(
          'invalid_request',
          `messages[${index}].content[${position}]: an assistant message carries text, tool_use and thinking blocks, not "${block.type}".`,
        );
    }
  });
  if (texts.length === 0 && toolCalls.length === 0 && thinkingBlocks.length === 0) return [];
  return [
    {
      role: 'assistant',
      content: assistantContent(texts),
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      ...(thinkingBlocks.length > 0 ? { thinking_blocks: thinkingBlocks } : {}),
    },
  ];
}

/** Text parts as one string, unless one carries a cache breakpoint: then the parts themselves. */
function assistantContent(texts: ChatPart[]): ChatMessage['content'] {
  if (texts.length === 0) return null;
  if (texts.some((part) => part.cache_control !== undefined)) return texts;
  return texts.map((part) => (part.type === 'text' ? part.text : '')).join('\n\n');
}

/**
 * A block's prompt-cache breakpoint on the chat part it became (the anthropic adapter puts it back;
 * other protocols do not get it, accepted-fields.ts).
 */
function withBreakpoint(part: ChatPart, block: { cache_control?: CacheControl | null }): ChatPart {
  return block.cache_control == null ? part : { ...part, cache_control: block.cache_control };
}

function breakpointOf(block: { cache_control?: CacheControl | null }): { cache_control?: CacheControl } {
  return block.cache_control == null ? {} : { cache_control: block.cache_control };
}

/** A document's parts, its breakpoint on the last one (a breakpoint caches everything up to it). */
function lastWithBreakpoint(parts: ChatPart[], block: { cache_control?: CacheControl | null }): ChatPart[] {
  const last = parts.at(-1);
  return last === undefined ? parts : [...parts.slice(0, -1), withBreakpoint(last, block)];
}

function imagePart(block: Block<'image'>): ChatPart {
  const url = block.source.type === 'base64' ? `data:${block.source.media_type};base64,${block.source.data}` : block.source.url;
  return { type: 'image_url', image_url: { url } };
}

/** A text document as text, its title and context before it, as Anthropic shows them to the model. */
function documentParts(block: Block<'document'>): ChatPart[] {
  const heading = [block.title, block.context].filter((line): line is string => typeof line === 'string' && line !== '');
  const source = block.source;
  const body: ChatPart[] =
    source.type === 'text'
      ? [{ type: 'text', text: source.data }]
      : typeof source.content === 'string'
        ? [{ type: 'text', text: source.content }]
        : source.content.map((part) => (part.type === 'text' ? { type: 'text' as const, text: part.text } : imagePart(part)));
  return heading.length === 0 ? body : [{ type: 'text', text: heading.join('\n') }, ...body];
}

/** A tool result's text (an error marked as such, since chat has no `is_error`) and the images it returned. */
function toolResultParts(block: Block<'tool_result'>): { text: string; images: ChatPart[] } {
  const texts: string[] = [];
  const images: ChatPart[] = [];
  if (typeof block.content === 'string') texts.push(block.content);
  for (const part of Array.isArray(block.content) ? block.content : []) {
    if (part.type === 'text') texts.push(part.text);
    else if (part.type === 'image') images.push(imagePart(part));
    else
      for (const documentPart of documentParts(part)) {
        if (documentPart.type === 'text') texts.push(documentPart.text);
        else images.push(documentPart);
      }
  }
  const text = texts.join('\n\n');
  return { text: block.is_error === true ? `Error: ${text}` : text, images };
}
