import { afterEach, describe, expect, it } from 'vitest';
import { startFakeUpstream } from '../../test/support/fake-upstream';
import { rawRequest } from '../../test/support/http-request';
import { freePort } from '../../test/support/listen';
import { startTestBridge } from '../../test/support/start-test-bridge';
import { parseUpstreamUrl } from '../upstream/upstream-kind';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
});

describe('GET /diagnostics and /health', () => {
  it('reports the bound address, loopback, a reachable upstream and the outbox, without the upstream key', async () => {
    const upstream = await startFakeUpstream();
    const bridge = await startTestBridge({
      upstream: parseUpstreamUrl(upstream.url, 'ollama'),
      upstreamApiKey: 'sk-never-shown',
      apiBaseUrl: 'http://127.0.0.1:9',
    });
    cleanup.push(upstream.close, () => bridge.close());
    const answer = await rawRequest(bridge.port, { path: '/diagnostics' });
    expect(answer.status).toBe(200);
    expect(answer.json()).toEqual({
      bound_address: `127.0.0.1:${bridge.port}`,
      loopback: true,
      upstream: { url: upstream.url, kind: 'ollama', reachable: true },
      outbox: { pending: 0, dead_letter: 0, forwarding_to: 'http://127.0.0.1:9' },
    });
    expect(answer.text).not.toContain('sk-never-shown');
    expect(upstream.requests.at(-1)!.headers.authorization).toBe('Bearer sk-never-shown');
  });

  it('says why an upstream is unreachable', async () => {
    const bridge = await startTestBridge({ upstream: parseUpstreamUrl(`http://127.0.0.1:${await freePort()}`) });
    cleanup.push(() => bridge.close());
    const { upstream } = (await rawRequest(bridge.port, { path: '/diagnostics' })).json();
    expect(upstream).toMatchObject({ reachable: false, reason: 'connection refused', kind: 'openai_compatible' });
  });

  it('GET /health answers ok with the version; unknown paths get the not_found envelope', async () => {
    const bridge = await startTestBridge();
    cleanup.push(() => bridge.close());
    const health = await rawRequest(bridge.port, { path: '/health' });
    expect(health.json()).toEqual({ status: 'ok', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    const missing = await rawRequest(bridge.port, { path: '/admin?secret=1' });
    expect(missing.status).toBe(404);
    expect(missing.json().error).toMatchObject({ code: 'not_found', request_id: missing.headers['x-request-id'] });
  });
});
