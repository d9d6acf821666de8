import { afterEach, describe, expect, it } from 'vitest';
import { rawRequest } from '../../test/support/http-request';
import { startTestBridge, type TestBridge } from '../../test/support/start-test-bridge';
import { parseAllowedOrigin } from './cors';

const allowed = 'https://app.example.com';
let bridge: TestBridge;
afterEach(() => bridge?.close());

const start = async () => (bridge = await startTestBridge({ allowedOrigins: [allowed] }));

describe('Host header allowlist (DNS rebinding)', () => {
  it('refuses Host: evil.example with 403 and grants nothing', async () => {
    await start();
    const answer = await rawRequest(bridge.port, { path: '/health', headers: { host: 'evil.example', origin: allowed } });
    expect(answer.status).toBe(403);
    expect(answer.json().error.code).toBe('forbidden');
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
  });

  it("accepts the bridge's own names and refuses them on another port", async () => {
    await start();
    for (const host of [`127.0.0.1:${bridge.port}`, `localhost:${bridge.port}`, `[::1]:${bridge.port}`, `LOCALHOST:${bridge.port}`]) {
      expect((await rawRequest(bridge.port, { path: '/health', headers: { host } })).status).toBe(200);
    }
    for (const host of ['localhost', `localhost:${bridge.port + 1}`, `evil.example:${bridge.port}`]) {
      expect((await rawRequest(bridge.port, { path: '/health', headers: { host } })).status).toBe(403);
    }
  });
});

describe('Origin allowlist (CORS)', () => {
  it('grants an allowed origin, with Vary: Origin and the request ID exposed', async () => {
    await start();
    const answer = await rawRequest(bridge.port, { path: '/health', headers: { origin: allowed } });
    expect(answer.status).toBe(200);
    expect(answer.headers['access-control-allow-origin']).toBe(allowed);
    expect(answer.headers['access-control-expose-headers']).toBe('x-request-id');
    expect(answer.headers.vary).toBe('Origin');
  });

  it('refuses a disallowed origin with 403 and no CORS grant', async () => {
    await start();
    const answer = await rawRequest(bridge.port, { path: '/health', headers: { origin: 'https://evil.example' } });
    expect(answer.status).toBe(403);
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
    expect(answer.headers.vary).toBe('Origin');
  });

  it('answers a Private Network Access preflight from an allowed origin', async () => {
    await start();
    const answer = await rawRequest(bridge.port, {
      method: 'OPTIONS',
      path: '/v1/chat/completions',
      headers: {
        origin: allowed,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, authorization, x-evil',
        'access-control-request-private-network': 'true',
      },
    });
    expect(answer.status).toBe(204);
    expect(answer.headers['access-control-allow-origin']).toBe(allowed);
    expect(answer.headers['access-control-allow-private-network']).toBe('true');
    expect(answer.headers['access-control-allow-methods']).toContain('POST');
    expect(answer.headers['access-control-allow-headers']).toBe('content-type, authorization');
    expect(answer.headers.vary).toBe('Origin');
  });

  it('gives a preflight from a disallowed origin no grant, private network included', async () => {
    await start();
    const answer = await rawRequest(bridge.port, {
      method: 'OPTIONS',
      path: '/v1/chat/completions',
      headers: {
        origin: 'https://evil.example',
        'access-control-request-method': 'POST',
        'access-control-request-private-network': 'true',
      },
    });
    expect(answer.status).toBe(403);
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
    expect(answer.headers['access-control-allow-private-network']).toBeUndefined();
  });

  it('never accepts "*" or a non-origin in the configuration', () => {
    expect(() => parseAllowedOrigin('*')).toThrow(/not allowed/);
    expect(() => parseAllowedOrigin('https://app.example.com/path')).toThrow();
    expect(() => parseAllowedOrigin('file:///tmp')).toThrow();
    expect(parseAllowedOrigin('https://App.Example.com/')).toBe('https://app.example.com');
  });
});
