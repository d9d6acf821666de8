/**
 * OpenAI's Responses API spoken natively (`<root>/responses`; Azure: `<root>/v1/responses`): a call of
 * the Responses surface whose candidate is OpenAI or Azure is sent as the client wrote it (its model,
 * max_output_tokens within the feature's cap, `store: false`: the gateway keeps no response), not
 * translated through chat. The answer comes back in chat terms for the one pipeline to meter — text,
 * refusals, function-call arguments and reasoning summaries as they stream, the usage of the final
 * response — and each chunk carries the upstream's own event (`responses_event`), the final one its
 * whole response (`responses_response`), which the Responses surface answers with unchanged.
 */
import { z } from 'zod';
import type { OpenAiDialect } from '#shared/providers/provider-catalog.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { parseSse } from '#shared/wire/sse.ts';
import type { ChatCompletion, ChatCompletionChunk, ChatRequest, ChatUsage } from '../../openai/chat-schemas.ts';
import { upstreamEventJson } from '../upstream-event.ts';

/** Where a dialect's Responses API lives: the API root's `responses` (Azure's v1 API under its resource root). */
export function responsesUrl(baseUrl: string, dialect: OpenAiDialect): string {
  const [root = ''] = baseUrl.split('?', 1);
  const trimmed = root.replace(/\/+$/, '');
  return dialect.url === 'azure_deployment' ? `${trimmed}/v1/responses` : `${trimmed}/responses`;
}

/**
 * The upstream body: the client's Responses request (Faucet's own fields already removed), with the
 * candidate's model and output limit (the feature's cap applied to its chat translation), and never
 * stored on OpenAI's side (its default is to store).
 */
export function nativeResponsesBody(native: Record<string, unknown>, request: ChatRequest, stream: boolean): Record<string, unknown> {
  const { max_output_tokens: _asked, stream: _stream, store: _store, ...rest } = native;
  const limit = request.max_completion_tokens ?? request.max_tokens;
  return { ...rest, model: request.model, ...(limit == null ? {} : { max_output_tokens: limit }), stream, store: false };
}

const tokenCount = z.number().int().nonnegative();
const responsesUsageSchema = z.looseObject({
  input_tokens: tokenCount,
  output_tokens: tokenCount,
  total_tokens: tokenCount.optional(),
  input_tokens_details: z.looseObject({ cached_tokens: tokenCount.nullish() }).nullish(),
  output_tokens_details: z.looseObject({ reasoning_tokens: tokenCount.nullish() }).nullish(),
});

const outputItemSchema = z.looseObject({ type: z.string() });
const responseSchema = z.looseObject({
  id: z.string(),
  object: z.literal('response'),
  created_at: z.number().int().optional(),
  model: z.string(),
  status: z.string().nullish(),
  incomplete_details: z.looseObject({ reason: z.string().nullish() }).nullish(),
  output: z.array(outputItemSchema),
  usage: responsesUsageSchema.nullish(),
});
type ResponseBody = z.infer<typeof responseSchema>;

/** The Responses usage in the chat convention the pipeline meters (input and output include their cached and reasoning parts). */
function chatUsageOf(usage: ResponseBody['usage']): ChatUsage | undefined {
  if (usage == null) return undefined;
  return {
    prompt_tokens: usage.input_tokens,
    completion_tokens: usage.output_tokens,
    total_tokens: usage.total_tokens ?? usage.input_tokens + usage.output_tokens,
    prompt_tokens_details: { cached_tokens: usage.input_tokens_details?.cached_tokens ?? 0 },
    completion_tokens_details: { reasoning_tokens: usage.output_tokens_details?.reasoning_tokens ?? 0 },
  };
}

/** How a response ended, as a chat finish reason: its output limit as `length`, tool calls as `tool_calls`. */
function finishReasonOf(response: Pick<ResponseBody, 'status' | 'incomplete_details'>, calledTools: boolean): string {
  if (response.status === 'incomplete') return response.incomplete_details?.reason === 'content_filter' ? 'content_filter' : 'length';
  return calledTools ? 'tool_calls' : 'stop';
}

interface TextPart {
  type: string;
  text?: string;
  refusal?: string;
}

/** A whole response (a call not streamed) as the completion the pipeline meters, the response itself kept. */
export function completionOfResponse(value: unknown, label: string): ChatCompletion {
  const parsed = responseSchema.safeParse(value);
  if (!parsed.success) throw new FaucetError('upstream_error', `${label} answered with an unexpected response shape.`);
  const response = parsed.data;
  let content: string | null = null;
  let refusal: string | null = null;
  let reasoning: string | null = null;
  const toolCalls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> = [];
  for (const item of response.output) {
    if (item.type === 'message') {
      for (const part of (item.content ?? []) as TextPart[]) {
        if (part.type === 'output_text') content = (content ?? '') + (part.text ?? '');
        if (part.type === 'refusal') refusal = (refusal ?? '') + (part.refusal ?? '');
      }
    } else if (item.type === 'function_call') {
      toolCalls.push({
        id: String(item.call_id ?? ''),
        type: 'function',
        function: { name: String(item.name ?? ''), arguments: String(item.arguments ?? '') },
      });
    } else if (item.type === 'reasoning') {
      for (const part of (item.summary ?? []) as TextPart[]) reasoning = (reasoning ?? '') + (part.text ?? '');
    }
  }
  const message = {
    role: 'assistant',
    content,
    ...(refusal === null ? {} : { refusal }),
    ...(reasoning === null ? {} : { reasoning_content: reasoning }),
    ...(toolCalls.length === 0 ? {} : { tool_calls: toolCalls }),
  };
  const usage = chatUsageOf(response.usage);
  return {
    id: response.id,
    object: 'chat.completion',
    created: response.created_at ?? Math.floor(Date.now() / 1000),
    model: response.model,
    choices: [{ index: 0, message, finish_reason: finishReasonOf(response, toolCalls.length > 0) }],
    ...(usage === undefined ? {} : { usage }),
    responses_response: response,
  };
}

const eventSchema = z.looseObject({ type: z.string() });

/**
 * The upstream's Responses events as chat chunks: the metered stream counts their deltas and reads the
 * usage of `response.completed` (or `.incomplete`); every chunk carries its event. `error`, a failed
 * response, or a stream that ends before its response does, is an upstream failure mid-stream.
 */
export async function* chunksFromResponsesSse(body: ReadableStream<Uint8Array>, label: string): AsyncGenerator<ChatCompletionChunk> {
  let id = '';
  let model = '';
  let created = Math.floor(Date.now() / 1000);
  let calledTools = false;
  for await (const sse of parseSse(body)) {
    if (sse.data === '[DONE]') break;
    const value = upstreamEventJson(sse.data, label);
    const parsed = eventSchema.safeParse(value);
    if (!parsed.success) throw new FaucetError('upstream_error', `${label} streamed an unexpected event shape.`);
    const event = parsed.data;
    if (event.type === 'error' || event.type === 'response.failed') {
      throw new FaucetError('upstream_error', `${label} reported an error mid-stream.`);
    }
    const snapshot = responseSchema.partial().safeParse(event.response);
    if (snapshot.success) {
      id = snapshot.data.id ?? id;
      model = snapshot.data.model ?? model;
      created = snapshot.data.created_at ?? created;
    }
    const chunk = (choices: ChatCompletionChunk['choices'], extra: Record<string, unknown> = {}): ChatCompletionChunk => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices,
      responses_event: event,
      ...extra,
    });
    const delta = (value: ChatCompletionChunk['choices'][number]['delta']) => chunk([{ index: 0, delta: value, finish_reason: null }]);
    const text = typeof event.delta === 'string' ? event.delta : '';
    const outputIndex = typeof event.output_index === 'number' ? event.output_index : 0;
    switch (event.type) {
      case 'response.output_text.delta':
        yield delta({ content: text });
        break;
      case 'response.refusal.delta':
        yield delta({ refusal: text });
        break;
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        yield delta({ reasoning_content: text });
        break;
      case 'response.output_item.added': {
        const item = event.item as { type?: string; call_id?: string; name?: string } | undefined;
        if (item?.type !== 'function_call') {
          yield chunk([]);
          break;
        }
        calledTools = true;
        const call = { index: outputIndex, id: item.call_id ?? '', type: 'function', function: { name: item.name ?? '', arguments: '' } };
        yield delta({ tool_calls: [call] });
        break;
      }
      case 'response.function_call_arguments.delta':
        yield delta({ tool_calls: [{ index: outputIndex, function: { arguments: text } }] });
        break;
      case 'response.completed':
      case 'response.incomplete': {
        const final = responseSchema.safeParse(event.response);
        if (!final.success) throw new FaucetError('upstream_error', `${label} ended with an unexpected response shape.`);
        const usage = chatUsageOf(final.data.usage);
        const finish = { index: 0, delta: {}, finish_reason: finishReasonOf(final.data, calledTools) };
        yield chunk([finish], { ...(usage === undefined ? {} : { usage }), responses_response: final.data });
        return;
      }
      default:
        yield chunk([]);
    }
  }
  throw new FaucetError('upstream_error', `${label} ended the stream before its response was complete.`);
}
