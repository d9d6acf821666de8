import { FaucetError } from '../../../../shared/errors.ts';
import { chatCompletionChunkSchema, type ChatCompletionChunk } from '../../openai/chat-schemas.ts';
import { parseSse } from '../../sse/parse-sse.ts';

/** Reads an OpenAI-style SSE body into chunks, until `[DONE]` or the end of the body. */
export async function* chunksFromOpenAiSse(body: ReadableStream<Uint8Array>, label: string): AsyncGenerator<ChatCompletionChunk> {
  for await (const event of parseSse(body)) {
    if (event.data === '[DONE]') return;
    let value: unknown;
    try {
      value = JSON.parse(event.data);
    } catch (error) {
      throw new FaucetError('upstream_error', `${label} streamed an event that is not JSON.`, { cause: error });
    }
    if (typeof value === 'object' && value !== null && 'error' in value) {
      throw new FaucetError('upstream_error', `${label} reported an error mid-stream.`);
    }
    const parsed = chatCompletionChunkSchema.safeParse(value);
    if (!parsed.success) throw new FaucetError('upstream_error', `${label} streamed an unexpected chunk shape.`);
    yield parsed.data;
  }
}
