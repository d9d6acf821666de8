import { afterEach, describe, expect, it } from 'vitest';
import type { Session } from '../src/types.ts';
import { clientFor } from './client-for.ts';
import { startFakeFaucet, type FakeFaucet } from './fake-faucet.ts';
import { sendError, sendJson, startFakeServer } from './fake-server.ts';
import { completion, startScriptedGateway } from './scripted-gateway.ts';

let faucet: FakeFaucet | undefined;
afterEach(async () => {
  await faucet?.close();
  faucet = undefined;
});

const chatTokens = (server: FakeFaucet) => server.requestsTo('/v1/chat/completions').map((request) => request.headers.authorization);

describe('sessions', () => {
  it('are created lazily, on the first call that needs one', async () => {
    faucet = await startFakeFaucet();
    const client = clientFor(faucet.url);
    expect(faucet.sessions).toHaveLength(0);
    await client.chat({ feature: 'chat', model: 'mock:echo', input: 'hi' });
    expect(faucet.sessions).toHaveLength(1);
    expect(faucet.requestsTo('/v1/sessions')[0]!.body).toBe(
      JSON.stringify({ public_app_id: 'app_fake_demo', external_user_id: 'user-42@example.com' }),
    );
  });

  it('are cached and shared by concurrent calls', async () => {
    faucet = await startFakeFaucet();
    const client = clientFor(faucet.url);
    await Promise.all([client.chat({ feature: 'chat', input: 'a' }), client.getWallet(), client.listUsage()]);
    await client.chat({ feature: 'chat', input: 'b' });
    expect(faucet.sessions).toEqual(['fvs_fakesession00000001']);
    expect(new Set(chatTokens(faucet))).toEqual(new Set(['Bearer fvs_fakesession00000001']));
  });

  it('are renewed before they expire, without waiting for a 401', async () => {
    faucet = await startFakeFaucet({ sessionTtlSeconds: 600 });
    let now = Date.now();
    const client = clientFor(faucet.url, { now: () => now });
    await client.chat({ feature: 'chat', input: 'a' });
    now += 590_000; // inside the last fifth of the token's life
    await client.chat({ feature: 'chat', input: 'b' });
    expect(faucet.sessions).toEqual(['fvs_fakesession00000001', 'fvs_fakesession00000002']);
    expect(chatTokens(faucet)).toEqual(['Bearer fvs_fakesession00000001', 'Bearer fvs_fakesession00000002']);
    expect(faucet.requestsTo('/v1/chat/completions')).toHaveLength(2);
  });

  it('are renewed once when the server answers 401, and the call succeeds', async () => {
    faucet = await startFakeFaucet();
    const client = clientFor(faucet.url);
    await client.chat({ feature: 'chat', input: 'a' });
    faucet.expireAllSessions();
    const answer = await client.chat({ feature: 'chat', input: 'b' });
    expect(answer.choices[0]!.message.content).toBe('echo: b');
    expect(chatTokens(faucet)).toEqual([
      'Bearer fvs_fakesession00000001',
      'Bearer fvs_fakesession00000001',
      'Bearer fvs_fakesession00000002',
    ]);
  });

  it('are renewed only once per call: a second 401 is thrown', async () => {
    faucet = await startFakeFaucet({ sessionTtlSeconds: 0 });
    const error = await clientFor(faucet.url)
      .getWallet()
      .catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: 'unauthorized', status: 401 });
    expect(faucet.requestsTo('/v1/user/wallet')).toHaveLength(2);
  });

  it('are renewed between retries when the wait outlasted the token', async () => {
    const server = await startScriptedGateway([
      (_, response) => sendError(response, 503, 'internal_error', 'req_503', { 'retry-after': '0' }),
      (_, response) => sendJson(response, 200, completion()),
    ]);
    let now = Date.now();
    const client = clientFor(server.url, { now: () => now, onRetry: () => (now += 590_000) });
    await client.chat({ feature: 'chat', input: 'x' });
    await server.close();
    expect(server.chatRequests().map((request) => request.headers.authorization)).toEqual([
      'Bearer fvs_scripted_1',
      'Bearer fvs_scripted_2',
    ]);
  });

  it('keep being created for the other callers when one caller aborts while waiting', async () => {
    let releaseSession: () => void = () => undefined;
    const sessionGate = new Promise<void>((resolve) => (releaseSession = resolve));
    const server = await startFakeServer(async (request, response) => {
      if (request.path === '/v1/sessions') {
        await sessionGate;
        return sendJson(response, 201, {
          session_token: 'fvs_slowsession0000000001',
          token_type: 'Bearer',
          expires_at: new Date(Date.now() + 600_000).toISOString(),
        });
      }
      sendJson(response, 200, completion());
    });
    const client = clientFor(server.url);
    const controller = new AbortController();
    const aborted = client.chat({ feature: 'chat', input: 'a', signal: controller.signal }).catch((thrown: unknown) => thrown);
    const patient = client.chat({ feature: 'chat', input: 'b' });
    while (server.requestsTo('/v1/sessions').length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    expect(await aborted).toMatchObject({ code: 'aborted' });
    releaseSession();
    expect((await patient).faucet.request_id).toBe('req_ok');
    expect(server.requestsTo('/v1/sessions')).toHaveLength(1);
    expect(server.requestsTo('/v1/chat/completions')).toHaveLength(1);
    await server.close();
  });

  it('are not even requested when the signal already fired', async () => {
    faucet = await startFakeFaucet();
    await expect(clientFor(faucet.url).getWallet(AbortSignal.abort())).rejects.toMatchObject({ code: 'aborted' });
    expect(faucet.requests).toHaveLength(0);
  });

  it('are retried on their own only: a failing session endpoint sees maxRetries + 1 requests, not more', async () => {
    const server = await startFakeServer((_, response) => sendError(response, 503, 'internal_error', 'req_down'));
    const error = await clientFor(server.url, { retry: { baseDelayMs: 1, maxRetries: 2 } })
      .chat({ feature: 'chat', input: 'x' })
      .catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: 'internal_error', status: 503 });
    expect(server.requestsTo('/v1/sessions')).toHaveLength(3);
    expect(server.requestsTo('/v1/chat/completions')).toHaveLength(0);
    await server.close();
  });

  it('can be created explicitly', async () => {
    faucet = await startFakeFaucet();
    const session = await clientFor(faucet.url).createSession();
    expect(session).toMatchObject({ session_token: 'fvs_fakesession00000001', token_type: 'Bearer' });
  });
});

describe('sessions from the developer backend or a signed user token', () => {
  it("asks the app's backend for a session (session()), and again once the server refuses it", async () => {
    faucet = await startFakeFaucet();
    const server = faucet;
    let asked = 0;
    // The app's backend: it calls POST /v1/sessions with its developer key; here the fake plays both.
    const session = async () => {
      asked++;
      const response = await fetch(`${server.url}/v1/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ public_app_id: server.publicAppId, external_user_id: 'backend-user' }),
      });
      return (await response.json()) as Session;
    };
    const client = clientFor(server.url, { user: undefined, session });
    await client.chat({ feature: 'chat', input: 'a' });
    await client.chat({ feature: 'chat', input: 'b' });
    expect(asked).toBe(1);
    server.expireAllSessions();
    await client.chat({ feature: 'chat', input: 'c' });
    expect(asked).toBe(2);
    expect(chatTokens(server)).toEqual([
      'Bearer fvs_fakesession00000001',
      'Bearer fvs_fakesession00000001',
      'Bearer fvs_fakesession00000001',
      'Bearer fvs_fakesession00000002',
    ]);
  });

  it('accepts a bare session token from the backend, kept until the server refuses it', async () => {
    faucet = await startFakeFaucet();
    const server = faucet;
    const tokens: string[] = [];
    const session = async () => {
      const response = await fetch(`${server.url}/v1/sessions`, {
        method: 'POST',
        body: JSON.stringify({ public_app_id: server.publicAppId, external_user_id: 'u' }),
      });
      const token = ((await response.json()) as { session_token: string }).session_token;
      tokens.push(token);
      return token;
    };
    const client = clientFor(server.url, { user: undefined, session });
    await client.getWallet();
    server.expireAllSessions();
    await client.getWallet();
    expect(tokens).toEqual(['fvs_fakesession00000001', 'fvs_fakesession00000002']);
  });

  it('exchanges a signed user token (userToken()) for a session, with a fresh token on expiry, and never sends a user id', async () => {
    faucet = await startFakeFaucet();
    let minted = 0;
    const userToken = async () => `header.payload-${++minted}.signature`;
    const client = clientFor(faucet.url, { user: undefined, userToken });
    await client.chat({ feature: 'chat', input: 'a' });
    faucet.expireAllSessions();
    await client.chat({ feature: 'chat', input: 'b' });
    expect(faucet.requestsTo('/v1/sessions').map((request) => JSON.parse(request.body))).toEqual([
      { public_app_id: 'app_fake_demo', user_token: 'header.payload-1.signature' },
      { public_app_id: 'app_fake_demo', user_token: 'header.payload-2.signature' },
    ]);
  });
});

describe('sessions of anonymous apps (a device id kept on the device)', () => {
  /** A localStorage stand-in: the SDK reads and writes it like a page's. */
  const memoryStorage = () => {
    const items = new Map<string, string>();
    return { items, getItem: (key: string) => items.get(key) ?? null, setItem: (key: string, value: string) => void items.set(key, value) };
  };
  const deviceIds = (server: FakeFaucet) =>
    server.requestsTo('/v1/sessions').map((request) => JSON.parse(request.body) as Record<string, unknown>);

  it('send a random device id of at least 128 bits, never a user id, and the same one when the session is renewed', async () => {
    faucet = await startFakeFaucet();
    const client = clientFor(faucet.url, { user: undefined, anonymous: { storage: null } });
    await client.chat({ feature: 'chat', input: 'a' });
    faucet.expireAllSessions();
    await client.chat({ feature: 'chat', input: 'b' });
    const [first, second] = deviceIds(faucet);
    expect(Object.keys(first!).sort()).toEqual(['device_id', 'public_app_id']);
    expect(first!.device_id).toMatch(/^[A-Za-z0-9_-]{32}$/); // 24 random bytes, base64url
    expect(second).toEqual(first);
  });

  it("keep the device id in the page's localStorage, so the next page load is the same device", async () => {
    faucet = await startFakeFaucet();
    const storage = memoryStorage();
    const original = Object.getOwnPropertyDescriptor(globalThis, 'localStorage');
    Object.defineProperty(globalThis, 'localStorage', { value: storage, configurable: true });
    try {
      await clientFor(faucet.url, { user: undefined, anonymous: true }).getWallet();
      await clientFor(faucet.url, { user: undefined, anonymous: true }).getWallet();
    } finally {
      if (original) Object.defineProperty(globalThis, 'localStorage', original);
      else delete (globalThis as { localStorage?: unknown }).localStorage;
    }
    const [first, second] = deviceIds(faucet);
    expect(storage.items.get('faucet:device-id:app_fake_demo')).toBe(first!.device_id);
    expect(second!.device_id).toBe(first!.device_id);
  });

  it('make a new device id for each client without storage, and replace a stored value the server would refuse', async () => {
    faucet = await startFakeFaucet();
    await clientFor(faucet.url, { user: undefined, anonymous: { storage: null } }).getWallet();
    await clientFor(faucet.url, { user: undefined, anonymous: { storage: null } }).getWallet();
    const storage = memoryStorage();
    storage.items.set('faucet:device-id:app_fake_demo', 'short');
    await clientFor(faucet.url, { user: undefined, anonymous: { storage } }).getWallet();
    const [first, second, third] = deviceIds(faucet);
    expect(second!.device_id).not.toBe(first!.device_id);
    expect(third!.device_id).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(storage.items.get('faucet:device-id:app_fake_demo')).toBe(third!.device_id);
  });

  it('still work when the storage throws (private mode): the id lives in memory', async () => {
    faucet = await startFakeFaucet();
    const throwing = {
      getItem: () => {
        throw new Error('SecurityError');
      },
      setItem: () => {
        throw new Error('QuotaExceededError');
      },
    };
    const client = clientFor(faucet.url, { user: undefined, anonymous: { storage: throwing } });
    await client.getWallet();
    faucet.expireAllSessions();
    await client.getWallet();
    const [first, second] = deviceIds(faucet);
    expect(second!.device_id).toBe(first!.device_id);
  });
});
