/**
 * The console's logic without a browser: the API client turns the error envelope into the message
 * shown, exact USD sums, what forms send, local days, the Worker's `/api` pass-through, and which
 * scripts the bench counts as the first view.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { firstViewScripts } from '../../../scripts/bench/console-size.ts';
import { ApiError, createApiClient, describeError } from '../src/app/api.ts';
import { fromUnits, toUnits } from '../src/app/ui/amounts.ts';
import { aliasesField, intField, listField, usdField } from '../src/app/ui/forms.ts';
import { filtersFrom, instantOf, localOf } from '../src/app/views/developer/calls-wire.ts';
import { localDay } from '../src/app/views/developer/usage.ts';
import worker, { apiTarget } from '../src/worker.ts';

const envelope = (status: number, code: string, message: string) =>
  new Response(JSON.stringify({ error: { code, message, request_id: 'req-1' } }), {
    status,
    headers: { 'content-type': 'application/json' },
  });

describe('API client', () => {
  it('sends the credential as a bearer token to /api and the body as JSON', async () => {
    const fetchImpl = vi.fn(async (_url: RequestInfo | URL, _init?: RequestInit) => Response.json({ ok: true }));
    const client = createApiClient('fdk_secret', fetchImpl as typeof fetch);
    expect(await client.post('/v1/developer/apps', { name: 'A' })).toEqual({ ok: true });
    await client.get('/v1/developer/usage', { from: '2026-11-01', cursor: undefined, limit: 10 });
    const [url, init] = fetchImpl.mock.calls[0]!;
    expect(url).toBe('/api/v1/developer/apps');
    expect(init).toMatchObject({
      method: 'POST',
      body: '{"name":"A"}',
      headers: { authorization: 'Bearer fdk_secret', 'content-type': 'application/json' },
    });
    expect(fetchImpl.mock.calls[1]![0]).toBe('/api/v1/developer/usage?from=2026-11-01&limit=10');
  });

  it("turns the API's error envelope into an ApiError whose message the console shows with the request id", async () => {
    const client = createApiClient('k', (async () => envelope(400, 'invalid_request', 'Invalid request: name: Too small')) as typeof fetch);
    const error = await client.post('/v1/developer/apps', {}).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 400, code: 'invalid_request', requestId: 'req-1' });
    expect(describeError(error)).toBe('Invalid request: name: Too small (request req-1)');
  });

  it('reports a non-envelope answer and an unreachable API without inventing a message', async () => {
    const html = createApiClient(
      'k',
      (async () => new Response('<html>', { status: 502, headers: { 'x-request-id': 'r2' } })) as typeof fetch,
    );
    expect(describeError(await html.get('/v1/x').catch((caught: unknown) => caught))).toBe('The API answered 502. (request r2)');
    const down = createApiClient('k', (async () => {
      throw new TypeError('fetch failed');
    }) as typeof fetch);
    expect(await down.get('/v1/x').catch((caught: unknown) => caught)).toMatchObject({ code: 'network_error', status: 0 });
  });
});

describe('Calls filters', () => {
  it('takes the known filters of a link (the End users row gives user_ref) and drops the rest', () => {
    expect(filtersFrom(new URLSearchParams('user_ref=abc&outcome=refused&token=nope&model='))).toEqual({
      user_ref: 'abc',
      outcome: 'refused',
    });
  });

  it('sends a datetime-local time as an ISO instant and shows it back in local time', () => {
    const instant = instantOf('2026-03-08T04:30');
    expect(instant).toBe(new Date('2026-03-08T04:30').toISOString());
    expect(localOf(instant)).toBe('2026-03-08T04:30');
    expect(instantOf('')).toBeUndefined();
    expect(localOf(undefined)).toBe('');
  });
});

describe('amounts and forms', () => {
  it('sums USD strings exactly in units of 1e-8', () => {
    expect(fromUnits(toUnits('0.10000000') + toUnits('0.20000000'))).toBe('0.30000000');
    expect(fromUnits(toUnits('-1.5') + toUnits('0.00000001'))).toBe('-1.49999999');
    expect(() => toUnits('1e3')).toThrow();
  });

  it('sends form text as typed except layout', () => {
    expect(usdField('0.5')).toBe('0.50000000');
    expect(usdField(' 12 ')).toBe('12.00000000');
    expect(usdField('')).toBeNull();
    expect(usdField('-1')).toBe('-1');
    expect(usdField('1.123456789')).toBe('1.123456789');
    expect(intField('60')).toBe(60);
    expect(intField('6.5')).toBe('6.5');
    expect(listField('a:b, c:d\n\ne:f')).toEqual(['a:b', 'c:d', 'e:f']);
    expect(aliasesField('fast = openai:gpt-4o-mini\nbad')).toEqual({ fast: 'openai:gpt-4o-mini', bad: '' });
  });

  it('counts local days in the browser time zone', () => {
    const now = new Date('2026-03-08T03:30:00Z');
    expect(localDay('UTC', 0, now)).toBe('2026-03-08');
    expect(localDay('America/New_York', 0, now)).toBe('2026-03-07');
    expect(localDay('America/New_York', -29, now)).toBe('2026-02-06');
  });
});

describe('console Worker', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('maps /api/* to the control API and nothing else', () => {
    expect(apiTarget(new URL('https://c.example/api/v1/developer/usage?tz=UTC'), 'https://api.example')?.href).toBe(
      'https://api.example/v1/developer/usage?tz=UTC',
    );
    expect(apiTarget(new URL('https://c.example/apiary'), 'https://api.example')).toBeNull();
    expect(apiTarget(new URL('https://c.example/'), 'https://api.example')).toBeNull();
  });

  it('answers /health itself with its version on the release line, without calling the API', async () => {
    vi.stubGlobal('fetch', async () => {
      throw new Error('the API must not be called');
    });
    const env = { API_ORIGIN: 'https://api.example', ASSETS: { fetch: async () => new Response('asset') } };
    const answer = await worker.fetch(new Request('https://c.example/health') as never, env);
    expect(await answer.json()).toEqual({ status: 'ok', service: 'console', version: '0.6.0' });
  });

  it('forwards method, authorization and body, drops cookies, hands the decoded answer back without its old encoding, and answers an envelope when the API is down', async () => {
    const seen: Array<{ url: string; method: string; headers: Headers; body: string }> = [];
    vi.stubGlobal('fetch', async (url: URL, init: RequestInit) => {
      seen.push({
        url: url.href,
        method: init.method ?? 'GET',
        headers: new Headers(init.headers),
        body: await new Response(init.body).text(),
      });
      const answer = envelope(404, 'not_found', 'App not found');
      // What fetch() hands a Worker: a decoded body that still names the encoding it travelled in.
      answer.headers.set('content-encoding', 'br');
      return answer;
    });
    const env = { API_ORIGIN: 'https://api.example', ASSETS: { fetch: async () => new Response('asset') } };
    // The handler types the Workers runtime's request (with `cf`); a plain Request is what arrives here.
    const run = (request: Request) => worker.fetch(request as never, env);
    const request = new Request('https://c.example/api/v1/developer/apps/x', {
      method: 'PATCH',
      headers: { authorization: 'Bearer fdk_1', cookie: 'a=b', 'content-type': 'application/json' },
      body: '{"name":"N"}',
    });
    const answer = await run(request);
    expect(answer.status).toBe(404);
    expect(answer.headers.get('content-encoding')).toBeNull();
    expect(await answer.json()).toMatchObject({ error: { code: 'not_found', message: 'App not found' } });
    expect(seen[0]!.url).toBe('https://api.example/v1/developer/apps/x');
    expect(seen[0]!.method).toBe('PATCH');
    expect(seen[0]!.headers.get('authorization')).toBe('Bearer fdk_1');
    expect(seen[0]!.headers.get('cookie')).toBeNull();
    expect(seen[0]!.body).toBe('{"name":"N"}');
    expect(await (await run(new Request('https://c.example/developer'))).text()).toBe('asset');

    vi.stubGlobal('fetch', async () => {
      throw new TypeError('connection refused');
    });
    const down = await run(new Request('https://c.example/api/health', { headers: { 'x-request-id': 'bad id!' } }));
    expect(down.status).toBe(502);
    const body = (await down.json()) as { error: { code: string; request_id: string } };
    expect(body.error.code).toBe('upstream_error');
    expect(body.error.request_id).not.toBe('bad id!');
    expect(down.headers.get('x-request-id')).toBe(body.error.request_id);
  });
});

describe('bench: first-view scripts', () => {
  it('counts the entry module and its preloads, not lazy chunks', () => {
    const html =
      '<script type="module" crossorigin src="/assets/index-a.js"></script><link rel="modulepreload" crossorigin href="/assets/vendor-b.js"><link rel="stylesheet" href="/assets/index.css">';
    expect(firstViewScripts(html)).toEqual(['/assets/index-a.js', '/assets/vendor-b.js']);
  });
});
