/**
 * Gemini's `streamGenerateContent?alt=sse` → OpenAI chunks. Each event is a whole
 * `GenerateContentResponse` holding the next piece of the answer; its `usageMetadata` is the running
 * total so far, not an increment, so the last one reported is the call's usage (merge rule: the
 * latest replaces the earlier, never summed). The stream has no end marker: it ends after the event
 * with a `finishReason`; a stream that ends before one was cut off (an upstream error). After the
 * upstream ends, a final chunk with empty `choices` carries the usage, as OpenAI sends it with
 * `include_usage`.
 */
import { FaucetError } from '#shared/wire/errors.ts';
import { parseSse } from '#shared/wire/sse.ts';
import type { ChatCompletionChunk } from '../../openai/chat-schemas.ts';
import { answerOf, geminiResponseSchema, openAiFinishReason, reportedUsage, type GeminiUsage } from './from-gemini-response.ts';
import { upstreamEventJson } from '../upstream-event.ts';

export async function* chunksFromGeminiSse(
  body: ReadableStream<Uint8Array>,
  model: string,
  created: number,
): AsyncGenerator<ChatCompletionChunk> {
  let id = '';
  let reportedModel = model;
  let usage: GeminiUsage | undefined;
  let started = false;
  let finished = false;
  let toolCalls = 0;
  const chunk = (delta: ChatCompletionChunk['choices'][number]['delta'], finishReason: string | null = null): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: reportedModel,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });

  for await (const event of parseSse(body)) {
    const value = upstreamEventJson(event.data, 'Google');
    if (typeof value === 'object' && value !== null && 'error' in value) {
      throw new FaucetError('upstream_error', 'Google reported an error mid-stream.');
    }
    const parsed = geminiResponseSchema.safeParse(value);
    if (!parsed.success) throw new FaucetError('upstream_error', 'Google streamed an unexpected response shape.');
    const response = parsed.data;
    if (!started) {
      id = response.responseId ?? `gemini-${created}`;
      reportedModel = response.modelVersion ?? model;
      started = true;
      yield chunk({ role: 'assistant', content: '' });
    }
    if (response.usageMetadata !== undefined) usage = response.usageMetadata;
    const candidate = response.candidates?.[0];
    const { text, toolCalls: calls } = answerOf(candidate?.content?.parts ?? [], `call_${id}_${toolCalls}`);
    if (text !== '') yield chunk({ content: text });
    if (calls.length > 0) {
      yield chunk({
        tool_calls: calls.map((call, index) => ({ index: toolCalls + index, id: call.id, type: 'function', function: call.function })),
      });
      toolCalls += calls.length;
    }
    const blocked = candidate === undefined && response.promptFeedback?.blockReason !== undefined;
    const finishReason = blocked ? 'content_filter' : openAiFinishReason(candidate?.finishReason, toolCalls > 0);
    if (finishReason !== null) {
      finished = true;
      yield chunk({}, finishReason);
    }
  }
  if (!finished) throw new FaucetError('upstream_error', 'Google ended the stream before it finished.');
  const reported = reportedUsage(usage);
  if (reported !== null) yield { id, object: 'chat.completion.chunk', created, model: reportedModel, choices: [], usage: reported };
}
