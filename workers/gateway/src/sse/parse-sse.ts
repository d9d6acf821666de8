/** One server-sent event: `event` is absent for plain `data:` events. */
export interface SseEvent {
  event?: string;
  data: string;
  id?: string;
}

/**
 * Parses a byte stream of server-sent events per the WHATWG EventSource rules: CRLF, LF or CR line
 * ends, multi-line `data:` joined with "\n", `:` comment lines ignored, a leading BOM dropped, and
 * an event dispatched only at a blank line (a trailing event without one is discarded, as browsers do).
 */
export async function* parseSse(stream: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let first = true;
  let data: string[] = [];
  let event: string | undefined;
  let id: string | undefined;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      if (first && buffer.length > 0) {
        if (buffer.charCodeAt(0) === 0xfeff) buffer = buffer.slice(1);
        first = false;
      }
      for (;;) {
        const end = lineEnd(buffer);
        if (end === null) break;
        const line = buffer.slice(0, end.index);
        buffer = buffer.slice(end.index + end.length);
        if (line === '') {
          if (data.length > 0) yield { data: data.join('\n'), ...(event === undefined ? {} : { event }), ...(id === undefined ? {} : { id }) };
          data = [];
          event = undefined;
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        let fieldValue = colon === -1 ? '' : line.slice(colon + 1);
        if (fieldValue.startsWith(' ')) fieldValue = fieldValue.slice(1);
        if (field === 'data') data.push(fieldValue);
        else if (field === 'event') event = fieldValue;
        else if (field === 'id') id = fieldValue;
      }
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
