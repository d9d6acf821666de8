import { SseDecoder } from '../../../workers/shared/wire/sse.ts';
import { FaucetError } from '../errors.ts';
import type { Deadline } from './deadline.ts';

/**
 * Yields the `data:` payloads of a server-sent-events body until `[DONE]` or the end. The deadline
 * is re-armed before every read, so a stream that goes quiet for longer than `idleMs` fails with
 * `timeout` instead of hanging.
 */
export async function* readSseData(
  body: ReadableStream<Uint8Array>,
  deadline: Deadline,
  idleMs: number,
  what: string,
): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const sse = new SseDecoder();
  try {
    for (;;) {
      deadline.arm(idleMs);
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (thrown) {
        throw deadline.toError(thrown, what);
      }
      if (chunk.done) break;
      for (const { event } of sse.push(decoder.decode(chunk.value, { stream: true }))) {
        if (event.data === '') continue;
        if (event.data === '[DONE]') return;
        yield event.data;
      }
    }
    if (sse.rest().trim() !== '') throw new FaucetError('invalid_response', `${what}: stream ended mid-event`);
  } finally {
    deadline.dispose();
    reader.cancel().catch(() => undefined);
  }
}
