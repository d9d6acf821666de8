/**
 * The Responses object (`object: "response"`) built from what the pipeline answered in chat terms: a
 * chat completion, or (for a stream) the items and usage the stream translator gathered. Its ids are
 * derived from the gateway's call id, so one call has one `resp_…` id in its answer, its events and
 * its logs. The request's settings are echoed as OpenAI does; the `faucet` object rides along as an
 * extra field, which the official clients keep and ignore.
 */
import type { ChatCompletion, ChatUsage } from '../../openai/chat-schemas.ts';
import type { FaucetObject } from '../../metering/faucet-object.ts';
import type { ResponsesRequest } from './responses-request.ts';

/** What names the response: the gateway's call id and when the call started (Unix seconds). */
export interface ResponseIds {
  callId: string;
  createdAt: number;
}

export interface OutputText {
  type: 'output_text';
  text: string;
  annotations: [];
  logprobs: [];
}

export interface OutputRefusal {
  type: 'refusal';
  refusal: string;
}

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export interface MessageOutput {
  type: 'message';
  id: string;
  role: 'assistant';
  status: ItemStatus;
  content: Array<OutputText | OutputRefusal>;
}

export interface FunctionCallOutput {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: ItemStatus;
}

export type OutputItem = MessageOutput | FunctionCallOutput;

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

type Reasoning = Required<NonNullable<ResponsesRequest['reasoning']>>;

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** Why a response ended early, as OpenAI names it. */
export type IncompleteReason = 'max_output_tokens' | 'content_filter';

export interface ResponseError {
  code: 'server_error' | 'rate_limit_exceeded';
  message: string;
}

export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  error: ResponseError | null;
  incomplete_details: { reason: IncompleteReason } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  model: string;
  output: OutputItem[];
  /** The concatenated output text, as the official SDK derives it (sent for clients without one). */
  output_text: string;
  parallel_tool_calls: boolean;
  previous_response_id: null;
  reasoning: { effort: Reasoning['effort'] | null; summary: Reasoning['summary'] | null };
  store: false;
  background: false;
  temperature: number | null;
  text: { format: NonNullable<NonNullable<ResponsesRequest['text']>['format']>; verbosity?: 'low' | 'medium' | 'high' };
  tool_choice: NonNullable<ResponsesRequest['tool_choice']>;
  tools: Array<{
    type: 'function';
    name: string;
    description: string | null;
    parameters: Record<string, unknown> | null;
    strict: boolean | null;
  }>;
  top_p: number | null;
  truncation: 'disabled';
  user?: string;
  usage?: ResponsesUsage;
  faucet?: FaucetObject;
}

/** The `resp_…` id of a call. */
export function responseIdOf(callId: string): string {
  return `resp_${callId.replaceAll('-', '')}`;
}

/** The id of the output item at `outputIndex`: unique within the call, the same in every event that names it. */
export function outputItemId(kind: 'msg' | 'fc', callId: string, outputIndex: number): string {
  return `${kind}_${callId.replaceAll('-', '')}_${outputIndex}`;
}

/** The status a chat `finish_reason` gives the response. */
export function endOf(
  finishReason: string | null | undefined,
): { status: 'completed' } | { status: 'incomplete'; reason: IncompleteReason } {
  if (finishReason === 'length') return { status: 'incomplete', reason: 'max_output_tokens' };
  if (finishReason === 'content_filter') return { status: 'incomplete', reason: 'content_filter' };
  return { status: 'completed' };
}

/**
 * Usage in Responses terms: the provider's count with its cached, cache-write and reasoning parts.
 * Without one, what the call was billed at (the `faucet` object's counts), so a client never reads
 * fewer tokens than it paid for.
 */
export function responsesUsageOf(usage: ChatUsage | null | undefined, faucet?: FaucetObject): ResponsesUsage | undefined {
  if (usage != null) {
    return {
      input_tokens: usage.prompt_tokens,
      input_tokens_details: {
        cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
        cache_write_tokens: usage.prompt_tokens_details?.cache_write_tokens ?? 0,
      },
      output_tokens: usage.completion_tokens,
      output_tokens_details: { reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0 },
      total_tokens: usage.total_tokens ?? usage.prompt_tokens + usage.completion_tokens,
    };
  }
  if (faucet === undefined) return undefined;
  return {
    input_tokens: faucet.input_tokens,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens: faucet.output_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: faucet.input_tokens + faucet.output_tokens,
  };
}

/** The response object around `output`, echoing the request's settings. */
export function responseObject(fields: {
  request: ResponsesRequest;
  ids: ResponseIds;
  model: string;
  status: ResponseStatus;
  output: OutputItem[];
  incompleteReason?: IncompleteReason;
  error?: ResponseError;
  usage?: ResponsesUsage;
  faucet?: FaucetObject;
}): ResponseObject {
  const { request } = fields;
  return {
    id: responseIdOf(fields.ids.callId),
    object: 'response',
    created_at: fields.ids.createdAt,
    status: fields.status,
    error: fields.error ?? null,
    incomplete_details: fields.incompleteReason === undefined ? null : { reason: fields.incompleteReason },
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    model: fields.model,
    output: fields.output,
    output_text: outputTextOf(fields.output),
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: request.reasoning?.effort ?? null, summary: request.reasoning?.summary ?? null },
    store: false,
    background: false,
    temperature: request.temperature ?? null,
    text: {
      format: request.text?.format ?? { type: 'text' },
      ...(request.text?.verbosity == null ? {} : { verbosity: request.text.verbosity }),
    },
    tool_choice: request.tool_choice ?? 'auto',
    tools: (request.tools ?? []).map((tool) => ({
      type: tool.type,
      name: tool.name,
      description: tool.description ?? null,
      parameters: tool.parameters ?? null,
      strict: tool.strict ?? null,
    })),
    top_p: request.top_p ?? null,
    truncation: 'disabled',
    ...(request.user === undefined ? {} : { user: request.user }),
    ...(fields.usage === undefined ? {} : { usage: fields.usage }),
    ...(fields.faucet === undefined ? {} : { faucet: fields.faucet }),
  };
}

/**
 * The answer to a non-streamed call: the completion's one choice as output items (its text or
 * refusal as a message, then each tool call as a `function_call`), `incomplete` when the provider
 * stopped at the token limit. `faucet` is what the chat route attaches to the completion.
 */
export function responseOfChatCompletion(
  completion: ChatCompletion & { faucet?: FaucetObject },
  request: ResponsesRequest,
  ids: ResponseIds,
): ResponseObject {
  const choice = completion.choices[0];
  const end = endOf(choice?.finish_reason);
  const itemStatus = end.status === 'incomplete' ? 'incomplete' : 'completed';
  const output: OutputItem[] = [];
  const message = choice?.message;
  const content: MessageOutput['content'] = [];
  if (message?.content) content.push({ type: 'output_text', text: message.content, annotations: [], logprobs: [] });
  if (message?.refusal) content.push({ type: 'refusal', refusal: message.refusal });
  if (content.length > 0) {
    output.push({ type: 'message', id: outputItemId('msg', ids.callId, 0), role: 'assistant', status: itemStatus, content });
  }
  for (const call of message?.tool_calls ?? []) {
    output.push({
      type: 'function_call',
      id: outputItemId('fc', ids.callId, output.length),
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      status: 'completed',
    });
  }
  return responseObject({
    request,
    ids,
    model: completion.model,
    status: end.status,
    output,
    incompleteReason: end.status === 'incomplete' ? end.reason : undefined,
    usage: responsesUsageOf(completion.usage, completion.faucet),
    faucet: completion.faucet,
  });
}

function outputTextOf(output: OutputItem[]): string {
  return output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((part) => (part.type === 'output_text' ? part.text : ''))
    .join('');
}
