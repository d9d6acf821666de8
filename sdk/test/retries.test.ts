import { afterEach, describe, expect, it } from 'vitest';
import type { RetryEvent, RetryOptions } from '../src/index.ts';
import { parseRetryAfter } from '../src/http/retry-policy.ts';
import { clientFor } from './client-for.ts';
import { sendError, sendJson } from './fake-server.ts';
import { completion, startScriptedGateway, type ChatAnswer } from './scripted-gateway.ts';

const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const ok: ChatAnswer = (_, response) => sendJson(response, 200, completion());
const failWith =
  (status: number, code: string, headers: Record<string, string> = {}): ChatAnswer =>
  (_, response) =>
    sendError(response, status, code, `req_${status}`, headers);

async function run(answers: ChatAnswer[], retry: Partial<RetryOptions> = { baseDelayMs: 1 }) {
  const server = await startScriptedGateway(answers);
  servers.push(server);
  const retries: RetryEvent[] = [];
  const client = clientFor(server.url, { retry, onRetry: (event) => retries.push(event) });
  const outcome = await client.chat({ feature: 'chat', input: 'hi' }).then(
    (value) => ({ value, error: undefined }),
    (error: unknown) => ({ value: undefined, error: error as { code: string; status: number } }),
  );
  return { ...outcome, retries, attempts: server.chatRequests() };
}

describe('retries', () => {
  it('retry a 503 and return the answer of the next attempt', async () => {
    const result = await run([failWith(503, 'internal_error'), ok]);
    expect(result.error).toBeUndefined();
    expect(result.attempts).toHaveLength(2);
    expect(result.retries.map((event) => event.error.status)).toEqual([503]);
  });

  it('send the same x-request-id on every attempt of one call', async () => {
    const result = await run([failWith(502, 'upstream_error'), ok]);
    const ids = result.attempts.map((request) => request.headers['x-request-id']);
    expect(ids[0]).toMatch(/^sdk_[0-9a-f]{32}$/);
    expect(ids[1]).toBe(ids[0]);
  });

  it('honour retry-after on a 429', async () => {
    const result = await run([failWith(429, 'rate_limited', { 'retry-after': '1' }), ok], { baseDelayMs: 1 });
    expect(result.error).toBeUndefined();
    expect(result.retries).toEqual([expect.objectContaining({ attempt: 1, delayMs: 1000 })]);
  });

  it('retry a 503 unavailable (the database is unreachable) after its retry-after, and keep its code', async () => {
    const result = await run([failWith(503, 'unavailable', { 'retry-after': '0' })], { baseDelayMs: 1, maxRetries: 1 });
    expect(result.error).toMatchObject({ code: 'unavailable', status: 503 });
    expect(result.retries).toEqual([expect.objectContaining({ attempt: 1, delayMs: 0 })]);
    expect(result.attempts).toHaveLength(2);
  });

  it('give up when retry-after asks for longer than the SDK may wait', async () => {
    const result = await run([failWith(429, 'rate_limited', { 'retry-after': '120' }), ok], { baseDelayMs: 1, maxDelayMs: 5_000 });
    expect(result.error).toMatchObject({ code: 'rate_limited', status: 429 });
    expect(result.attempts).toHaveLength(1);
  });

  it.each([
    [400, 'invalid_request'],
    [402, 'insufficient_balance'],
    [403, 'forbidden'],
    [404, 'not_found'],
    [409, 'conflict'],
    [413, 'payload_too_large'],
  ])('never retry a %i', async (status, code) => {
    const result = await run([failWith(status, code), ok]);
    expect(result.error).toMatchObject({ code, status });
    expect(result.retries).toEqual([]);
    expect(result.attempts).toHaveLength(1);
  });

  it('stop after maxRetries and throw the last error', async () => {
    const result = await run([failWith(500, 'internal_error')], { baseDelayMs: 1, maxRetries: 3 });
    expect(result.error).toMatchObject({ code: 'internal_error', status: 500 });
    expect(result.attempts).toHaveLength(4);
    expect(result.retries.map((event) => event.attempt)).toEqual([1, 2, 3]);
  });

  it('back off exponentially without retry-after', async () => {
    const result = await run([failWith(503, 'internal_error')], { baseDelayMs: 40, maxRetries: 3 });
    const delays = result.retries.map((event) => event.delayMs);
    expect(delays[0]).toBeGreaterThanOrEqual(20);
    expect(delays[0]).toBeLessThanOrEqual(40);
    expect(delays[1]).toBeGreaterThanOrEqual(40);
    expect(delays[1]).toBeLessThanOrEqual(80);
    expect(delays[2]).toBeGreaterThanOrEqual(80);
    expect(delays[2]).toBeLessThanOrEqual(160);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates, and ignores garbage', () => {
    const now = Date.parse('2026-11-22T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Sat, 21 Nov 2026 00:00:05 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-1', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
