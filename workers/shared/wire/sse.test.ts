import { describe, expect, it } from 'vitest';
import { formatSseDone, formatSseEvent, formatSseJson } from './format-sse.ts';
import { parseSse, type SseEvent } from './sse.ts';

function streamOf(pieces: Array<string | Uint8Array>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const piece of pieces) controller.enqueue(typeof piece === 'string' ? encoder.encode(piece) : piece);
      controller.close();
    },
  });
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of parseSse(stream)) events.push(event);
  return events;
}

describe('parseSse', () => {
  it('reads data events split at arbitrary byte boundaries', async () => {
    const events = await collect(streamOf(['da', 'ta: {"a"', ':1}\n', '\ndata: [DONE]\n\n']));
    expect(events).toEqual([{ data: '{"a":1}' }, { data: '[DONE]' }]);
  });

  it('accepts CRLF and lone CR line ends, even a CRLF split across reads', async () => {
    const events = await collect(streamOf(['data: one\r', '\n\r\ndata: two\r\rdata: three\n\n']));
    expect(events).toEqual([{ data: 'one' }, { data: 'two' }, { data: 'three' }]);
  });

  it('joins multi-line data and keeps event names and ids', async () => {
    const events = await collect(streamOf(['event: message_start\nid: 7\ndata: line1\ndata: line2\n\n']));
    expect(events).toEqual([{ event: 'message_start', id: '7', data: 'line1\nline2' }]);
  });

  it('skips comments, a BOM and blank events, and drops an unterminated last event', async () => {
    const events = await collect(streamOf(['\uFEFF: keep-alive\n\n', 'event: ping\n\n', 'data: kept\n\n', 'data: cut off']));
    expect(events).toEqual([{ data: 'kept' }]);
  });

  it('decodes a multi-byte character split across reads', async () => {
    const bytes = new TextEncoder().encode('data: héllo ✓\n\n');
    const events = await collect(streamOf([bytes.slice(0, 8), bytes.slice(8, 15), bytes.slice(15)]));
    expect(events).toEqual([{ data: 'héllo ✓' }]);
  });

  it('reads back what the formatters write', async () => {
    const events = await collect(streamOf([formatSseJson({ x: 'a\nb' }), formatSseEvent('ping', { type: 'ping' }), formatSseDone()]));
    expect(events).toEqual([{ data: '{"x":"a\\nb"}' }, { event: 'ping', data: '{"type":"ping"}' }, { data: '[DONE]' }]);
  });

  it('cancels the source when the consumer stops early', async () => {
    let cancelled = false;
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode('data: tick\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const event of parseSse(source)) {
      expect(event.data).toBe('tick');
      break;
    }
    expect(cancelled).toBe(true);
  });
});
