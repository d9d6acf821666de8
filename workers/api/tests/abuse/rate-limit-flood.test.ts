/**
 * A flood from one client address: the limiter lets exactly its limit through per window, refuses the
 * rest with 429, `retry-after` and the envelope, and does not touch other addresses.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { api, call, createSession, createTestEnv, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv({ API_RATE_LIMIT_MAX_REQUESTS: '10', API_RATE_LIMIT_WINDOW_MS: '600000' });
});

describe('rate-limit flood', () => {
  it('serves exactly the limit out of 60 concurrent requests, refuses the rest with 429, spares other clients', async () => {
    const session = await createSession(testEnv);
    const flood = await Promise.all(
      Array.from({ length: 60 }, () =>
        call(api(), testEnv, '/v1/user/wallet', { token: session.token, headers: { 'cf-connecting-ip': '198.51.100.7' } }),
      ),
    );
    const served = flood.filter((response) => response.status === 200);
    const refused = flood.filter((response) => response.status === 429);
    expect(served).toHaveLength(10);
    expect(refused).toHaveLength(50);
    for (const response of refused) {
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
      const body = (await response.json()) as { error: { code: string; request_id: string } };
      expect(body.error).toMatchObject({ code: 'rate_limited', request_id: response.headers.get('x-request-id') });
    }
    const other = await call(api(), testEnv, '/v1/user/wallet', { token: session.token, headers: { 'cf-connecting-ip': '198.51.100.8' } });
    expect(other.status).toBe(200);
  });
});
