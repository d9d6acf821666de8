import { FaucetError } from '../errors.ts';
import type { Deadline } from './deadline.ts';

/**
 * Yields the `data:` payloads of a server-sent-events body until `[DONE]` or the end. The deadline
 * is re-armed before every read, so a stream that goes quiet for longer than `idleMs` fails with
 * `timeout` instead of hanging.
 */
export async function* readSseData(body: ReadableStream<Uint8Array>, deadline: Deadline, idleMs: number, what: string): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
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
      buffer += decoder.decode(chunk.value, { stream: true }).replace(/\r\n?/g, '\n');
      let boundary: number;
      while ((boundary = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary + 2);
        const data = event
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).replace(/^ /, ''))
          .join('\n');
        if (data === '') continue;
        if (data === '[DONE]') return;
        yield data;
      }
    }
    if (buffer.trim() !== '') throw new FaucetError('invalid_response', `${what}: stream ended mid-event`);
  } finally {
    deadline.dispose();
    reader.cancel().catch(() => undefined);
  }
}
