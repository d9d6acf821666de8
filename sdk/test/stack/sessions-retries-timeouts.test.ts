import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../../scripts/lib/stack.ts';
import { createFaucet, FaucetError, type FaucetOptions, type RetryEvent } from '../../src/index.ts';
import { backendSession, startRealStack } from '../real-stack.ts';
import { recordingFetch } from './recording-fetch.ts';

/**
 * A stack of its own with 3-second sessions, a mock model that thinks for a second, and a gateway
 * limit of 4 requests per 3 seconds, so refreshes, timeouts, aborts and 429s really happen.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startRealStack({
    sessionTtlSeconds: 3,
    workerVars: { MOCK_PROVIDER_LATENCY_MS: '1000', GATEWAY_RATE_LIMIT_MAX_REQUESTS: '4', GATEWAY_RATE_LIMIT_WINDOW_MS: '3000' },
  });
}, 180_000);
afterAll(async () => {
  await stack?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function client(options: Partial<FaucetOptions> = {}) {
  return createFaucet({
    publicAppId: stack.publicAppId,
    // The backend mints through the same (recording) fetch, so the tests see its session requests too.
    session: backendSession(stack, stack.demoExternalUserId, options.fetch),
    baseUrl: stack.apiUrl,
    gatewayBaseUrl: stack.gatewayUrl,
    retry: { maxRetries: 6 },
    ...options,
  });
}

const chat = (faucet: ReturnType<typeof client>, input: string, signal?: AbortSignal) =>
  faucet.chat({ feature: stack.featureKey, model: 'mock:echo', input, signal });

describe('sessions on the real stack (3 s TTL)', () => {
  it('renews the session shortly before it expires, without a 401', async () => {
    const recorder = recordingFetch();
    let now = Date.now();
    // The SDK's clock jumps past the renewal point at once, so the test does not race the server's 3 s.
    const faucet = client({ fetch: recorder.fetch, now: () => now });
    await chat(faucet, 'one');
    // Measured from after the session was minted (on a loaded machine that can take a while): past
    // its renewal point (3 s lifetime less a fifth) whenever the server issued it.
    now = Date.now() + 3_000;
    await chat(faucet, 'two');
    expect(recorder.statusesOf('/v1/sessions')).toEqual([201, 201]);
    expect(recorder.statusesOf('/v1/chat/completions').filter((status) => status !== 429)).toEqual([200, 200]);
  }, 120_000);

  it('renews the session once when the server says it expired (401), and the call succeeds', async () => {
    const recorder = recordingFetch();
    const frozen = Date.now();
    // The SDK's clock stands still, so only the server can tell that the token expired.
    const faucet = client({ fetch: recorder.fetch, now: () => frozen });
    await chat(faucet, 'one');
    await sleep(3_500);
    const answer = await chat(faucet, 'two');
    expect(answer.choices[0]!.message.content).toBe('Echo: two');
    expect(recorder.statusesOf('/v1/sessions')).toEqual([201, 201]);
    expect(recorder.statusesOf('/v1/chat/completions').filter((status) => status !== 429)).toEqual([200, 401, 200]);
  }, 120_000);
});

describe('timeouts and abort on the real stack', () => {
  it('times out a call the model has not answered in time, with code timeout', async () => {
    const error = await chat(client({ timeoutMs: 200 }), 'slow').catch((thrown: unknown) => thrown);
    expect(FaucetError.isInstance(error) && error.code).toBe('timeout');
  }, 120_000);

  it('aborts a call in flight with code aborted', async () => {
    const controller = new AbortController();
    const recorder = recordingFetch();
    const faucet = client({
      fetch: (input, init) => {
        const sent = recorder.fetch(input, init);
        if (String(input).endsWith('/v1/chat/completions')) setTimeout(() => controller.abort(), 50);
        return sent;
      },
    });
    const error = await chat(faucet, 'never mind', controller.signal).catch((thrown: unknown) => thrown);
    expect(FaucetError.isInstance(error) && error.code).toBe('aborted');
    expect(recorder.statusesOf('/v1/chat/completions')).toEqual(['failed']);
  }, 120_000);
});

describe('retries on the real stack', () => {
  it('waits out 429 rate_limited as retry-after says, and every call succeeds', async () => {
    const retries: RetryEvent[] = [];
    const faucet = client({ onRetry: (event) => retries.push(event) });
    // Ten calls against a limit of four per window: at least two must be refused, whatever the window's phase.
    const answers = await Promise.all(Array.from({ length: 10 }, (_, index) => chat(faucet, `call ${index}`)));
    expect(answers.map((answer) => answer.choices[0]!.message.content)).toEqual(
      Array.from({ length: 10 }, (_, index) => `Echo: call ${index}`),
    );
    const limited = retries.filter((event) => event.error.code === 'rate_limited');
    expect(limited.length).toBeGreaterThanOrEqual(2);
    for (const event of limited) {
      expect(event.error.status).toBe(429);
      expect(event.delayMs).toBe(event.error.retryAfterMs);
      expect(event.delayMs).toBeLessThanOrEqual(3_000);
    }
  }, 180_000);
});
