/**
 * The rate-limit and metrics Durable Objects failing. The limiter fails open (docs/operations.md):
 * paid traffic keeps being served and stays bounded by holds; metrics are best effort, never on a
 * request's path. Requests through both workers are served and the books still reconcile.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { env as cloudflareEnv } from 'cloudflare:test';
import type { Env } from '#shared/env.ts';
import { adminToken, api, call, createSession, createTestEnv, gateway, type TestEnv } from '../../../test/harness.ts';
import { fund } from '../../../test/gateway-kit.ts';

/** A Durable Object namespace whose objects cannot be reached. */
function unreachableNamespace(where: 'get' | 'call') {
  const failing = () => Promise.reject(new Error('Durable Object is overloaded'));
  return {
    idFromName: (name: string) => ({ name }),
    get: () => {
      if (where === 'get') throw new Error('Durable Object namespace unavailable');
      return { hit: failing, record: failing, series: failing };
    },
  } as unknown as NonNullable<Env['RATE_LIMITER']>;
}

const limits = { API_RATE_LIMIT_MAX_REQUESTS: '2', GATEWAY_RATE_LIMIT_MAX_REQUESTS: '2' };
const hello = { model: 'mock:echo', feature: 'chat', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
let healthyEnv: TestEnv;
beforeAll(async () => {
  healthyEnv = await createTestEnv(limits);
});
afterEach(() => vi.restoreAllMocks());

async function fiveCallsEach(testEnv: TestEnv, ip: string) {
  const session = await createSession(testEnv);
  await fund(testEnv, session.walletId, '1.00000000');
  const statuses: number[] = [];
  for (let index = 0; index < 5; index++) {
    const headers = { 'cf-connecting-ip': ip };
    statuses.push((await call(api(), testEnv, '/v1/user/wallet', { token: session.token, headers })).status);
    statuses.push((await call(gateway(), testEnv, '/v1/chat/completions', { token: session.token, json: hello, headers })).status);
  }
  return statuses;
}

async function reconciliationOk(testEnv: TestEnv) {
  const response = await call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token: adminToken });
  return ((await response.json()) as { ok: boolean }).ok;
}

describe('Durable Object failures', () => {
  it('control: with a working limiter the same traffic is limited (so the limit below is real)', async () => {
    const statuses = await fiveCallsEach(healthyEnv, '203.0.113.1');
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(0);
  });

  it.each(['get', 'call'] as const)('a rate limiter failing at %s fails open: every request served, a warning logged', async (where) => {
    const logged = vi.spyOn(console, 'log');
    const testEnv = await createTestEnv({ ...limits, RATE_LIMITER: unreachableNamespace(where) });
    const statuses = await fiveCallsEach(testEnv, '203.0.113.2');
    expect(statuses).toEqual(Array(10).fill(200));
    expect(logged.mock.calls.some(([line]) => String(line).includes('failing open'))).toBe(true);
    expect(await reconciliationOk(testEnv)).toBe(true);
  });

  it.each(['get', 'call'] as const)('a metrics object failing at %s costs no request anything', async (where) => {
    const testEnv = await createTestEnv({ METRICS: unreachableNamespace(where) as unknown as Env['METRICS'] });
    const statuses = await fiveCallsEach(testEnv, '203.0.113.3');
    expect(statuses).toEqual(Array(10).fill(200));
    const metrics = await call(api(), testEnv, '/metrics');
    expect(metrics.status).not.toBe(200);
    const envelope = (await metrics.json()) as { error: { code: string; request_id: string } };
    expect(envelope.error.request_id).toBe(metrics.headers.get('x-request-id'));
    expect(await reconciliationOk(testEnv)).toBe(true);
  });

  it('the real bindings are present in the test worker (the overrides above replace real objects)', () => {
    const bindings = cloudflareEnv as unknown as Env;
    expect(bindings.RATE_LIMITER).toBeDefined();
    expect(bindings.METRICS).toBeDefined();
  });
});
