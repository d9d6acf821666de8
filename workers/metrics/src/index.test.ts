import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import app from './index.ts';

describe('metrics worker HTTP face', () => {
  it('answers /health with its name and its version on the release line', async () => {
    const response = await app.fetch(new Request('http://metrics.test/health'), env);
    expect(await response.json()).toEqual({ status: 'ok', service: 'metrics', version: '0.6.0' });
  });

  it('answers an unknown path with the DESIGN §4 envelope whose request_id is its x-request-id', async () => {
    const response = await app.fetch(new Request('http://metrics.test/nope', { headers: { 'x-request-id': 'req_metrics_404' } }), env);
    expect(response.status).toBe(404);
    expect(response.headers.get('x-request-id')).toBe('req_metrics_404');
    expect(await response.json()).toEqual({ error: { code: 'not_found', message: 'Not found', request_id: 'req_metrics_404' } });
  });

  it('makes a request id when none is sent, the same in header and body', async () => {
    const response = await app.fetch(new Request('http://metrics.test/nope'), env);
    const body = (await response.json()) as { error: { request_id: string } };
    expect(body.error.request_id).toBe(response.headers.get('x-request-id'));
  });
});
