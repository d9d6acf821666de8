/**
 * The chat request a Responses request becomes: the one the pipeline (hold, route, adapters,
 * metering) already speaks. Instructions are a system message first; a string input is one user
 * message; a model turn's text and function calls are one assistant message, each function call
 * output a tool message; reasoning items are dropped (no chat provider takes them back). The result
 * is checked against `chatRequestSchema`, so it is exactly what the chat route would accept, or a 400.
 */
import { describeZodError } from '#shared/render-error.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { type ChatMessage, type ChatRequest, chatRequestSchema } from '../../openai/chat-schemas.ts';
import type { InputItem, MessageItem, ResponsesRequest } from './responses-request.ts';

/** The chat request the pipeline holds, routes and meters: exactly what `chatRequestSchema` accepts, or a 400. */
export function chatRequestOfResponses(request: ResponsesRequest): ChatRequest {
  const messages: ChatMessage[] = [];
  if (request.instructions) messages.push({ role: 'system', content: request.instructions });
  if (typeof request.input === 'string') messages.push({ role: 'user', content: request.input });
  else
    request.input?.forEach((item, index) => {
      addItem(messages, item, index);
    });
  if (messages.length === 0) throw new FaucetError('invalid_request', 'Invalid request: input: at least one message is needed');

  const format = request.text?.format;
  const chat = {
    model: request.model,
    messages,
    stream: request.stream ?? undefined,
    max_completion_tokens: request.max_output_tokens,
    temperature: request.temperature,
    top_p: request.top_p,
    tools: request.tools?.map(({ type, name, description, parameters, strict }) => ({
      type,
      function: present({ name, description, parameters, strict }),
    })),
    tool_choice:
      typeof request.tool_choice === 'object' ? { type: 'function', function: { name: request.tool_choice.name } } : request.tool_choice,
    parallel_tool_calls: request.parallel_tool_calls,
    response_format:
      format?.type === 'json_schema'
        ? {
            type: 'json_schema',
            json_schema: present({ name: format.name, description: format.description, schema: format.schema, strict: format.strict }),
          }
        : format,
    verbosity: request.text?.verbosity,
    reasoning_effort: request.reasoning?.effort,
    user: request.user,
    safety_identifier: request.safety_identifier,
    service_tier: request.service_tier,
  };
  const parsed = chatRequestSchema.safeParse(present(chat));
  if (!parsed.success) throw new FaucetError('invalid_request', describeZodError(parsed.error));
  return parsed.data;
}

function addItem(messages: ChatMessage[], item: InputItem, index: number): void {
  switch (item.type) {
    case undefined:
    case 'message':
      messages.push(chatMessageOf(item, index));
      return;
    case 'function_call': {
      const call = { id: item.call_id, type: 'function' as const, function: { name: item.name, arguments: item.arguments } };
      // Calls the model made in one turn are one assistant message, its text (if any) included.
      const last = messages.at(-1);
      if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
      return;
    }
    case 'function_call_output':
      messages.push({
        role: 'tool',
        tool_call_id: item.call_id,
        content: typeof item.output === 'string' ? item.output : item.output.map((part) => ({ type: 'text', text: part.text })),
      });
      return;
    case 'reasoning':
      return;
  }
}

function chatMessageOf(item: MessageItem, index: number): ChatMessage {
  if (typeof item.content === 'string') return { role: item.role, content: item.content };
  const content: Exclude<ChatMessage['content'], string | null | undefined> = [];
  const refusals: string[] = [];
  item.content.forEach((part, partIndex) => {
    const path = `input.${index}.content.${partIndex}`;
    if (part.type === 'input_text' || part.type === 'output_text') content.push({ type: 'text', text: part.text });
    else if (part.type === 'refusal') {
      if (item.role !== 'assistant')
        throw new FaucetError('invalid_request', `Invalid request: ${path}: refusals belong to assistant messages`);
      refusals.push(part.refusal);
    } else {
      if (item.role !== 'user')
        throw new FaucetError('invalid_request', `Invalid request: ${path}: images are accepted in user messages only`);
      content.push({ type: 'image_url', image_url: present({ url: part.image_url, detail: part.detail }) });
    }
  });
  const [only] = content;
  const message: ChatMessage = {
    role: item.role,
    content: content.length === 0 ? null : content.length === 1 && only?.type === 'text' ? only.text : content,
  };
  if (refusals.length > 0) message.refusal = refusals.join('');
  return message;
}

/** The object without its absent (null or undefined) fields, so the chat request carries only what was asked. */
function present<T extends object>(value: T): { [K in keyof T]: Exclude<T[K], null> } {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field != null)) as { [K in keyof T]: Exclude<T[K], null> };
}
