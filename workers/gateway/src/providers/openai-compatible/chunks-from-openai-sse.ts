import { FaucetError } from '#shared/wire/errors.ts';
import { chatCompletionChunkSchema, type ChatCompletionChunk } from '../../openai/chat-schemas.ts';
import { parseSse } from '#shared/wire/sse.ts';
import { upstreamEventJson } from '../upstream-event.ts';

/**
 * Reads an OpenAI-style SSE body into chunks, until `[DONE]`. A body that ends without `[DONE]` and
 * without any choice having finished was cut off: that is an upstream error (the caller settles what
 * was delivered and tells the client), not a normal end the client could mistake for a full answer.
 */
export async function* chunksFromOpenAiSse(body: ReadableStream<Uint8Array>, label: string): AsyncGenerator<ChatCompletionChunk> {
  let finishedChoice = false;
  for await (const event of parseSse(body)) {
    if (event.data === '[DONE]') return;
    const value = upstreamEventJson(event.data, label);
    if (typeof value === 'object' && value !== null && 'error' in value) {
      throw new FaucetError('upstream_error', `${label} reported an error mid-stream.`);
    }
    const parsed = chatCompletionChunkSchema.safeParse(value);
    if (!parsed.success) throw new FaucetError('upstream_error', `${label} streamed an unexpected chunk shape.`);
    if (parsed.data.choices.some((choice) => choice.finish_reason != null)) finishedChoice = true;
    yield parsed.data;
  }
  if (!finishedChoice) throw new FaucetError('upstream_error', `${label} ended the stream before it finished.`);
}
