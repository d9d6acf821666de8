/**
 * The one hole in the address guard, for local stacks: the platform pool may call exactly the
 * loopback host:port of UPSTREAM_ALLOW_LOOPBACK, and only outside production. Any other loopback
 * port, and the same port in production, is refused before anything is fetched.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from '../../test/harness.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayWith, settled, userMessage, wallet } from '../../test/gateway-kit.ts';
import { checkUpstreamUrl } from './address-guard.ts';
import { loopbackAllowance } from './loopback-allowance.ts';

const fakePort = '43917';
const body = { model: 'openai:gpt-4o-mini', feature: 'chat', max_tokens: 5, messages: [userMessage('hi')] };

let base: TestEnv;
beforeAll(async () => {
  base = await createTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

async function callThrough(env: Record<string, string>) {
  const testEnv = { ...base, ...env };
  const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('hello')));
  const session = await fundedSession(testEnv, '1.00000000');
  const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, body);
  // The wallet object gives back its lease but the calls in flight (none): `held` is what calls hold.
  await settled(testEnv);
  return { response, upstream, balance: await wallet(testEnv, session.walletId) };
}

describe('the loopback allowance', () => {
  it('lets a development stack reach the configured fake upstream, sending it the call id', async () => {
    const { response, upstream } = await callThrough({
      ENVIRONMENT: 'development',
      OPENAI_BASE_URL: `http://127.0.0.1:${fakePort}/v1`,
      UPSTREAM_ALLOW_LOOPBACK: `127.0.0.1:${fakePort}`,
    });
    expect(response.status).toBe(200);
    expect(upstream.requests.map((request) => request.url)).toEqual([`http://127.0.0.1:${fakePort}/v1/chat/completions`]);
    expect(upstream.requests[0]!.headers['x-client-request-id']).toBe(response.headers.get('x-faucet-call-id'));
  });

  it('is refused in production: nothing is fetched and nothing is charged', async () => {
    const { response, upstream, balance } = await callThrough({
      ENVIRONMENT: 'production',
      OPENAI_BASE_URL: `http://127.0.0.1:${fakePort}/v1`,
      UPSTREAM_ALLOW_LOOPBACK: `127.0.0.1:${fakePort}`,
    });
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('upstream_error');
    expect(upstream.requests).toEqual([]);
    expect(balance).toMatchObject({ balance: '1.00000000', held: '0.00000000' });
  });

  it('does not open any other loopback port', async () => {
    const { response, upstream } = await callThrough({
      ENVIRONMENT: 'development',
      OPENAI_BASE_URL: 'http://127.0.0.1:5432/v1',
      UPSTREAM_ALLOW_LOOPBACK: `127.0.0.1:${fakePort}`,
    });
    expect(response.status).toBe(502);
    expect(upstream.requests).toEqual([]);
  });

  it('takes only one literal loopback host:port, never a range, a name or a private address', () => {
    const development = { ENVIRONMENT: 'development' };
    expect(loopbackAllowance({ ...development, UPSTREAM_ALLOW_LOOPBACK: `127.0.0.1:${fakePort}` })).toBe(`127.0.0.1:${fakePort}`);
    for (const value of [
      '127.0.0.1',
      '127.0.0.1:*',
      'localhost:8080',
      '10.0.0.1:80',
      '169.254.169.254:80',
      '127.0.0.1:0',
      '127.0.0.1:70000',
      '127.0.0.2:80',
    ]) {
      expect(loopbackAllowance({ ...development, UPSTREAM_ALLOW_LOOPBACK: value })).toBeNull();
    }
    expect(loopbackAllowance({ ENVIRONMENT: 'production', UPSTREAM_ALLOW_LOOPBACK: `127.0.0.1:${fakePort}` })).toBeNull();
    const allow = { allowLoopback: `127.0.0.1:${fakePort}` };
    expect(checkUpstreamUrl(`http://127.0.0.1:${fakePort}/v1`, allow).allowed).toBe(true);
    expect(checkUpstreamUrl(`http://127.0.0.1:${Number(fakePort) + 1}/v1`, allow).allowed).toBe(false);
    expect(checkUpstreamUrl(`http://localhost:${fakePort}/v1`, allow).allowed).toBe(false);
    expect(checkUpstreamUrl(`http://169.254.169.254:${fakePort}/`, allow).allowed).toBe(false);
  });
});
