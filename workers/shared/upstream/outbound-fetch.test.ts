import { describe, expect, it } from 'vitest';
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
