/**
 * Server-sent events, read one way everywhere (the gateway's upstream streams, the bridge's
 * pass-through, the SDK): the WHATWG EventSource rules — CRLF, LF or CR line ends (a CRLF split
 * across reads included), multi-line `data:` joined with "\n", `:` comment lines ignored, a leading
 * BOM dropped, and an event dispatched only at a blank line.
 */

/** One server-sent event: `event` is absent for plain `data:` events. */
export interface SseEvent {
  event?: string;
  data: string;
  id?: string;
}

/** Incremental decoder: feed text as it arrives, get the events completed so far with their exact text. */
export class SseDecoder {
  private buffer = '';
  private first = true;
  private data: string[] = [];
  private event: string | undefined;
  private id: string | undefined;
  /** Text of the event being read (for callers that pass events on unchanged). */
  private raw = '';

  push(text: string): Array<{ event: SseEvent; raw: string }> {
    this.buffer += text;
    if (this.first && this.buffer.length > 0) {
      if (this.buffer.charCodeAt(0) === 0xfeff) this.buffer = this.buffer.slice(1);
      this.first = false;
    }
    const events: Array<{ event: SseEvent; raw: string }> = [];
    for (;;) {
      const end = lineEnd(this.buffer);
      if (end === null) break;
      const line = this.buffer.slice(0, end.index);
      this.raw += this.buffer.slice(0, end.index + end.length);
      this.buffer = this.buffer.slice(end.index + end.length);
      if (line === '') {
        if (this.data.length > 0) {
          const event: SseEvent = {
            data: this.data.join('\n'),
            ...(this.event === undefined ? {} : { event: this.event }),
            ...(this.id === undefined ? {} : { id: this.id }),
          };
          events.push({ event, raw: this.raw });
        }
        this.data = [];
        this.event = undefined;
        this.raw = '';
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') this.data.push(value);
      else if (field === 'event') this.event = value;
      else if (field === 'id') this.id = value;
    }
    return events;
  }

  /** Text received after the last complete event (an event the stream never finished). */
  rest(): string {
    return this.raw + this.buffer;
  }
}

/** Parses a byte stream of server-sent events; a trailing event without its blank line is discarded, as browsers do. */
export async function* parseSse(stream: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  const sse = new SseDecoder();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      for (const { event } of sse.push(decoder.decode(value, { stream: true }))) yield event;
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

/** Finds the first complete line end; a lone CR at the very end may still be the start of CRLF. */
function lineEnd(buffer: string): { index: number; length: number } | null {
  for (let index = 0; index < buffer.length; index++) {
    const char = buffer.charCodeAt(index);
    if (char === 0x0a) return { index, length: 1 };
    if (char === 0x0d) {
      if (index + 1 === buffer.length) return null;
      return { index, length: buffer.charCodeAt(index + 1) === 0x0a ? 2 : 1 };
    }
  }
  return null;
}
