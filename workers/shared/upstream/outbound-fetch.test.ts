import { describe, expect, it, vi } from 'vitest';
import { FaucetError } from '../wire/errors.ts';
import { outboundFetch, type FetchFunction } from './outbound-fetch.ts';
import { readBodyText } from './read-body.ts';

const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' };

async function failureOf(promise: Promise<unknown>): Promise<FaucetError> {
  try {
    await promise;
  } catch (error) {
    if (FaucetError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a FaucetError');
}

/** A fetch that never answers until its request is aborted, like a stalled upstream. */
const stalledFetch: FetchFunction = (request) =>
  new Promise((_resolve, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason)));

describe('outboundFetch', () => {
  it('never calls fetch for a private destination', async () => {
    const seen: string[] = [];
    const fetch: FetchFunction = async (request) => {
      seen.push(request.url);
      return new Response('{}');
    };
    const failure = await failureOf(outboundFetch('http://169.254.169.254/latest/meta-data/', post, { fetch, timeoutMs: 1000 }));
    expect(failure.code).toBe('upstream_error');
    expect(failure.status).toBe(502);
    expect(failure.message).toContain('link-local');
    expect(seen).toEqual([]);
  });

  it('sends the request as given to a public destination and returns the body', async () => {
    let seen: Request | undefined;
    const fetch: FetchFunction = async (request) => {
      seen = request;
      return new Response('{"ok":true}', { status: 200, headers: { 'content-type': 'application/json' } });
    };
    const response = await outboundFetch('https://api.openai.com/v1/chat/completions', post, { fetch, timeoutMs: 1000 });
    expect(await readBodyText(response)).toBe('{"ok":true}');
    expect(seen?.method).toBe('POST');
    expect(seen?.url).toBe('https://api.openai.com/v1/chat/completions');
    expect(seen?.redirect).toBe('manual');
    expect(await seen?.text()).toBe('{}');
  });

  it('maps an upstream that sends no headers in time to upstream_timeout (504)', async () => {
    const failure = await failureOf(outboundFetch('https://api.openai.com/v1', post, { fetch: stalledFetch, timeoutMs: 20 }));
    expect(failure.code).toBe('upstream_timeout');
    expect(failure.status).toBe(504);
  });

  it('maps a body that stops arriving to upstream_timeout (504)', async () => {
    const fetch: FetchFunction = async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode('data: {"partial":'));
          },
        }),
      );
    const response = await outboundFetch('https://api.openai.com/v1', post, { fetch, timeoutMs: 20 });
    const failure = await failureOf(readBodyText(response));
    expect(failure.code).toBe('upstream_timeout');
  });

  it('keeps reading a body whose pieces keep coming within the timeout, long past the first one, then times out a stall', async () => {
    const encoder = new TextEncoder();
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const streamed =
      (pieces: number, thenStall: boolean): FetchFunction =>
      async () =>
        new Response(
          new ReadableStream<Uint8Array>({
            async start(controller) {
              // Each piece well within the 400 ms timeout (wide, so a loaded CI machine cannot stretch a
              // 50 ms sleep past it); all of them together take longer than it.
              for (let index = 0; index < pieces; index++) {
                await sleep(50);
                controller.enqueue(encoder.encode(`${index},`));
              }
              if (!thenStall) controller.close();
            },
          }),
        );
    const whole = await outboundFetch('https://api.openai.com/v1', post, { fetch: streamed(12, false), timeoutMs: 400 });
    expect(await readBodyText(whole)).toBe('0,1,2,3,4,5,6,7,8,9,10,11,');

    const stalled = await outboundFetch('https://api.openai.com/v1', post, { fetch: streamed(4, true), timeoutMs: 400 });
    const started = Date.now();
    const failure = await failureOf(readBodyText(stalled));
    expect(failure.code).toBe('upstream_timeout');
    // Timed out 400 ms after the last piece, not at the first deadline.
    expect(Date.now() - started).toBeGreaterThanOrEqual(4 * 50 + 400 - 20);
  });

  describe('buffered (a completion read whole)', () => {
    const pieces =
      (parts: Uint8Array[], thenStall = false, status = 200): FetchFunction =>
      async () =>
        new Response(
          new ReadableStream<Uint8Array>({
            async start(controller) {
              for (const part of parts) {
                await new Promise((resolve) => setTimeout(resolve, 5));
                controller.enqueue(part);
              }
              if (!thenStall) controller.close();
            },
          }),
          { status },
        );
    const bytes = (text: string) => new TextEncoder().encode(text);

    it('leaves an answer that declares no length as the guarded stream: its reader joins the pieces', async () => {
      const response = await outboundFetch('https://api.openai.com/v1', post, {
        fetch: pieces([bytes('{"a":'), bytes('1,"b":'), bytes('"é"}')]),
        timeoutMs: 1000,
        buffered: true,
      });
      expect(response.status).toBe(200);
      expect(await readBodyText(response)).toBe('{"a":1,"b":"é"}');
    });

    it('maps a body of no declared length that stops arriving to upstream_timeout for its reader', async () => {
      const response = await outboundFetch('https://api.openai.com/v1', post, {
        fetch: pieces([bytes('{"partial":')], true),
        timeoutMs: 40,
        buffered: true,
      });
      const failure = await failureOf(readBodyText(response));
      expect(failure.code).toBe('upstream_timeout');
    });

    it('leaves the size of an answer of no declared length to its reader, which refuses one too big', async () => {
      const megabyte = new Uint8Array(1024 * 1024);
      const response = await outboundFetch('https://api.openai.com/v1', post, {
        fetch: pieces(Array.from({ length: 9 }, () => megabyte)),
        timeoutMs: 1000,
        buffered: true,
      });
      const failure = await failureOf(readBodyText(response));
      expect(failure.code).toBe('upstream_error');
      expect(failure.message).toContain('exceeded');
    });

    const declared =
      (body: ReadableStream<Uint8Array>, length: number, headers: Record<string, string> = {}): FetchFunction =>
      async () =>
        new Response(body, { status: 200, headers: { 'content-length': String(length), ...headers } });
    const trickle = (parts: Uint8Array[], gapMs: number, thenStall = false) =>
      new ReadableStream<Uint8Array>({
        async start(controller) {
          for (const part of parts) {
            await new Promise((resolve) => setTimeout(resolve, gapMs));
            controller.enqueue(part);
          }
          if (!thenStall) controller.close();
        },
      });

    it('reads an uncompressed answer of declared length whole: it must arrive within one timeout of its headers', async () => {
      const parts = [bytes('{"a":'), bytes('1,"b":'), bytes('"é"'), bytes('}')];
      const length = parts.reduce((sum, part) => sum + part.byteLength, 0);
      const whole = await outboundFetch('https://api.openai.com/v1', post, {
        fetch: declared(trickle(parts, 5), length),
        timeoutMs: 1000,
        buffered: true,
      });
      expect(whole.headers.get('content-length')).toBe(String(length));
      // The runtime decoded it on arrival: its text is handed over, with no read loop in JS and no second read.
      const readers = vi.spyOn(ReadableStream.prototype, 'getReader');
      const texts = vi.spyOn(Response.prototype, 'text');
      try {
        expect(await readBodyText(whole)).toBe('{"a":1,"b":"é"}');
        expect(readers).not.toHaveBeenCalled();
        expect(texts).not.toHaveBeenCalled();
      } finally {
        readers.mockRestore();
        texts.mockRestore();
      }
      // A reader with a smaller limit still refuses it.
      const again = await outboundFetch('https://api.openai.com/v1', post, {
        fetch: declared(trickle(parts, 0), length),
        timeoutMs: 1000,
        buffered: true,
      });
      expect((await failureOf(readBodyText(again, 4))).message).toContain('exceeded');
      // Each piece within the 100 ms timeout, all of them together not: timed out.
      const slow = await failureOf(
        outboundFetch('https://api.openai.com/v1', post, { fetch: declared(trickle(parts, 30), length), timeoutMs: 100, buffered: true }),
      );
      expect(slow.code).toBe('upstream_timeout');
      const stalled = await failureOf(
        outboundFetch('https://api.openai.com/v1', post, { fetch: declared(trickle(parts, 5, true), 100), timeoutMs: 40, buffered: true }),
      );
      expect(stalled.code).toBe('upstream_timeout');
    });

    it('reads a compressed answer piece by piece, each within the timeout', async () => {
      const parts = [bytes('{"a":'), bytes('1,"b":'), bytes('"é"'), bytes('}')];
      const response = await outboundFetch('https://api.openai.com/v1', post, {
        // Each piece 120 ms apart, well within the 400 ms timeout; all four together take longer than it.
        fetch: declared(trickle(parts, 120), 64, { 'content-encoding': 'gzip' }),
        timeoutMs: 400,
        buffered: true,
      });
      expect(await readBodyText(response)).toBe('{"a":1,"b":"é"}');
    });

    it('refuses an answer over the size a completion may have, whatever length it declares', async () => {
      const megabyte = new Uint8Array(1024 * 1024);
      const failure = await failureOf(
        outboundFetch('https://api.openai.com/v1', post, {
          fetch: declared(
            trickle(
              Array.from({ length: 9 }, () => megabyte),
              1,
            ),
            10,
          ),
          timeoutMs: 1000,
          buffered: true,
        }),
      );
      expect(failure.code).toBe('upstream_error');
      expect(failure.message).toContain('exceeded');
    });

    it('leaves an error answer as a stream for its reader', async () => {
      const response = await outboundFetch('https://api.openai.com/v1', post, {
        fetch: pieces([bytes('{"error":'), bytes('"slow down"}')], false, 429),
        timeoutMs: 1000,
        buffered: true,
      });
      expect(response.status).toBe(429);
      expect(await readBodyText(response)).toBe('{"error":"slow down"}');
    });
  });

  it('maps a connection failure to upstream_error (502) without leaking its details', async () => {
    const fetch: FetchFunction = async () => {
      throw new TypeError('connect ECONNREFUSED 203.0.113.9:443');
    };
    const failure = await failureOf(outboundFetch('https://api.openai.com/v1', post, { fetch, timeoutMs: 1000 }));
    expect(failure.code).toBe('upstream_error');
    expect(failure.status).toBe(502);
    expect(failure.message).not.toContain('ECONNREFUSED');
  });

  it('maps a body that breaks mid-way to upstream_error', async () => {
    const fetch: FetchFunction = async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            controller.error(new Error('socket hang up'));
          },
        }),
      );
    const response = await outboundFetch('https://api.openai.com/v1', post, { fetch, timeoutMs: 1000 });
    const failure = await failureOf(readBodyText(response));
    expect(failure.code).toBe('upstream_error');
  });

  it('refuses to follow a redirect, which could point anywhere', async () => {
    const calls: string[] = [];
    const fetch: FetchFunction = async (request) => {
      calls.push(request.url);
      return new Response(null, { status: 307, headers: { location: 'http://169.254.169.254/' } });
    };
    const failure = await failureOf(outboundFetch('https://api.openai.com/v1', post, { fetch, timeoutMs: 1000 }));
    expect(failure.code).toBe('upstream_error');
    expect(calls).toEqual(['https://api.openai.com/v1']);
  });

  it('aborts the upstream exchange when the caller aborts', async () => {
    const caller = new AbortController();
    let upstreamSignal: AbortSignal | undefined;
    const fetch: FetchFunction = (request) => {
      upstreamSignal = request.signal;
      return stalledFetch(request);
    };
    const pending = failureOf(outboundFetch('https://api.openai.com/v1', post, { fetch, timeoutMs: 60_000, signal: caller.signal }));
    caller.abort();
    const failure = await pending;
    expect(upstreamSignal?.aborted).toBe(true);
    expect(failure.code).toBe('upstream_error');
  });
});
