/**
 * Written as the attacker: each test replays a way a hostile end user got a paid call for
 * free or under-billed on the seed, and checks the upstream call it caused was billed exactly once.
 * Defects: 1 client-chosen booking keys, 2 holds that lapse before their call ends, 4 aborts that
 * cut the bill, 7 retries that always fail.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { walletOfToken } from '#shared/auth/session-token.ts';
import { compareUsd, parseDatabaseAmount, usdFromUnits } from '#shared/money/index.ts';
import { api, call, demoPublicAppId, sql, type TestEnv } from '../../../test/harness.ts';
import {
  fakeUpstream,
  jsonResponse,
  openAiChunk,
  openAiCompletion,
  openAiSse,
  openSseResponse,
  sseResponse,
} from '../../../test/fake-upstream.ts';
import {
  chat,
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  newRequestId,
  openStream,
  settled,
  sseData,
  usageRows,
  userMessage,
  wallet,
} from '../../../test/gateway-kit.ts';

let testEnv: TestEnv;
let shortCalls: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test', UPSTREAM_DRAIN_MS: '2000' });
  // Calls end after 1 s: streams that run longer than a hold used to live (the test stand-in for 300 s).
  shortCalls = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test', CALL_MAX_DURATION_SECONDS: '1', UPSTREAM_DRAIN_MS: '100' });
});

const usage = { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 };
const platformBody = { model: 'openai:gpt-4o-mini', feature: 'chat', messages: [userMessage('Tell me something')], max_tokens: 50 };

/** A local usage report of the user whose session answered `userRef`. */
function localReport(requestId: string, userRef: string) {
  return {
    request_id: requestId,
    public_app_id: demoPublicAppId,
    user_id_hash: userRef,
    feature: 'chat',
    route_mode: 'local',
    provider: 'ollama',
    model: 'llama3.2:3b',
    input_tokens: 0,
    output_tokens: 0,
    estimated: false,
    occurred_at: '2026-11-22T01:00:00.000Z',
  };
}

async function readUntil(response: Response, marker: string): Promise<ReadableStreamDefaultReader<Uint8Array>> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let received = '';
  while (!received.includes(marker)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stream ended before ${marker}`);
    received += decoder.decode(value, { stream: true });
  }
  return reader;
}

describe('defect 1: the money key is the server’s, not the client’s x-request-id', () => {
  it('a zero-token local report filed first under the same id does not make a platform call free', async () => {
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('paid answer', usage)));
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const filed = await call(api(), testEnv, '/v1/usage/local', { json: localReport(requestId, session.userRef), token: session.token });
    expect(filed.status).toBe(200);

    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, platformBody, requestId);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { faucet: { charge: { amount_usd: string }; route_mode: string } };
    expect(body.faucet.route_mode).toBe('platform');
    expect(body.faucet.charge.amount_usd).not.toBe('0.00000000');
    await settled(testEnv);
    const rows = await usageRows(testEnv, requestId);
    expect(rows.map((row) => row.route_mode).sort()).toEqual(['local', 'platform']);
    expect(rows.find((row) => row.route_mode === 'platform')).toMatchObject({ input_tokens: 12, output_tokens: 9 });
    // Its worst case no longer held.
    expect((await wallet(testEnv, session.walletId)).held).toBe('0.00000000');
  });

  it('streamed too: the stream’s booking is its own, never a duplicate of the $0 report', async () => {
    const upstream = fakeUpstream(() =>
      sseResponse(openAiSse([openAiChunk({ role: 'assistant', content: 'Hi' }), openAiChunk({}, 'stop'), openAiChunk({}, null, usage)])),
    );
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    expect(
      (await call(api(), testEnv, '/v1/usage/local', { json: localReport(requestId, session.userRef), token: session.token })).status,
    ).toBe(200);
    const response = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      { ...platformBody, stream: true },
      requestId,
    );
    const events = sseData(await response.text());
    expect(events.at(-1)).toBe('[DONE]');
    expect(JSON.parse(events.at(-2)!)).toMatchObject({ faucet: { route_mode: 'platform', input_tokens: 12, output_tokens: 9 } });
    expect(JSON.parse(events.at(-2)!).faucet.charge.amount_usd).not.toBe('0.00000000');
  });

  it('a local report cannot claim a gateway call’s money key, and reports of one user never collide with another’s', async () => {
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('paid answer', usage)));
    const alice = await fundedSession(testEnv);
    const bob = await fundedSession(testEnv);
    const requestId = newRequestId();
    const response = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, alice.token, platformBody, requestId);
    const callId = response.headers.get('x-faucet-call-id');
    expect(callId).toMatch(/^[0-9a-f-]{36}$/);
    // Bob files reports under Alice's correlation id and under her call's money key.
    for (const id of [requestId, `call:${callId}`]) {
      expect((await call(api(), testEnv, '/v1/usage/local', { json: localReport(id, bob.userRef), token: bob.token })).status).toBe(200);
    }
    await settled(testEnv);
    const [booking] = await sql<{ route_mode: string; end_user_id: string }>(
      testEnv,
      'select route_mode, end_user_id::text from usage_events where request_id = $1',
      [`call:${callId}`],
    );
    expect(booking).toMatchObject({ route_mode: 'platform', end_user_id: alice.endUserId });
  });
});

describe('defect 7: retries', () => {
  it('a retry of a call that was never billed is served; a retry of a billed call gets 409 and no second charge', async () => {
    let fail = true;
    const upstream = fakeUpstream(() =>
      fail ? jsonResponse({ error: { message: 'overloaded' } }, 503) : jsonResponse(openAiCompletion('ok', usage)),
    );
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const first = await chat(app, testEnv, session.token, platformBody, requestId);
    expect(first.status).toBeGreaterThanOrEqual(500);
    await settled(testEnv);
    expect(await usageRows(testEnv, requestId)).toEqual([]);

    fail = false;
    const retry = await chat(app, testEnv, session.token, platformBody, requestId);
    expect(retry.status).toBe(200);
    await settled(testEnv);
    const afterRetry = await wallet(testEnv, session.walletId);

    const replay = await chat(app, testEnv, session.token, platformBody, requestId);
    expect(replay.status).toBe(409);
    expect(upstream.requests).toHaveLength(2);
    await settled(testEnv);
    expect(await usageRows(testEnv, requestId)).toHaveLength(1);
    expect(await wallet(testEnv, session.walletId)).toEqual(afterRetry);
  });

  it('the same id racing across routes and bodies takes effect once', async () => {
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('ok', usage)));
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const session = await fundedSession(testEnv, '5.00000000');
    const requestId = newRequestId();
    const bodies = [
      platformBody,
      { ...platformBody, model: 'mock:echo' },
      { ...platformBody, route_mode: 'platform' },
      { ...platformBody, max_tokens: 7 },
    ];
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, index) => chat(app, testEnv, session.token, bodies[index % bodies.length]!, requestId)),
    );
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status !== 200).every((status) => status === 409)).toBe(true);
    await settled(testEnv);
    expect(await usageRows(testEnv, requestId)).toHaveLength(1);
    expect((await wallet(testEnv, session.walletId)).held).toBe('0.00000000');
  });
});

describe('defect 2: a hold lives as long as its call', () => {
  /** A stream of the user of `token` that stays open past its deadline (max_tokens just under the cap). */
  const longStream = (env: TestEnv, token: string) =>
    openStream(
      gatewayWith({
        upstreamFetch: fakeUpstream(
          (_request, signal) =>
            openSseResponse(
              openAiSse([openAiChunk({ role: 'assistant', content: '' }), openAiChunk({ content: 'a very long story' })], false),
              signal,
            ).response,
        ).fetch,
      }),
      env,
      token,
      { ...platformBody, max_tokens: 64_000 - 1 },
    );

  /** The gateway ended the stream at its deadline and billed it at its bound; nothing of it is held after. */
  async function expectEndedAtDeadlineAndBilled(
    env: TestEnv,
    session: { walletId: string },
    stream: Awaited<ReturnType<typeof longStream>>,
  ) {
    const events = sseData(await stream.response.text());
    await stream.finished();
    expect(JSON.parse(events.at(-1)!)).toMatchObject({ error: { code: 'upstream_timeout' } });
    // A streamed call is held for a first quota of two steps of 1,024 tokens (docs/quota.md), not its
    // whole max_tokens: cut with no usage reported, it is billed at what was seen (17 bytes) plus a
    // step, which covers what can have been generated.
    expect(JSON.parse(events.at(-2)!)).toMatchObject({ object: 'faucet.usage', faucet: { estimated: true, output_tokens: 17 + 1_024 } });
    await settled(env);
    expect(await usageRows(env, stream.requestId)).toHaveLength(1);
    expect((await wallet(env, session.walletId)).held).toBe('0.00000000');
  }

  it('holds until past the call’s deadline (the lease outlives it), and the gateway ends a stream at that deadline and bills it', async () => {
    const session = await fundedSession(shortCalls);
    const stream = await longStream(shortCalls, session.token);
    // The call is authorized at the latest now: its deadline is at most one call duration (1 s) away.
    const [lease] = await sql<{ outlives_deadline: boolean }>(
      shortCalls,
      `select expires_at > now() + interval '1 second' as outlives_deadline from balance_holds where request_id = $1 and status = 'active'`,
      [`lease:${walletOfToken(session.token)}`],
    );
    expect(lease?.outlives_deadline).toBe(true);
    await expectEndedAtDeadlineAndBilled(shortCalls, session, stream);
  });

  it('a booking that arrives after its lease is gone is still written, the shortfall a receivable', async () => {
    const upstream = fakeUpstream((_request, signal) => {
      const open = openSseResponse(openAiSse([openAiChunk({ role: 'assistant', content: 'Part one' })], false), signal);
      return open.response;
    });
    const session = await fundedSession(testEnv, '0.00100000');
    const { response, requestId, finished } = await openStream(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      ...platformBody,
      max_tokens: 1_000,
    });
    const reader = await readUntil(response, 'Part one');
    // The lease lapses (as when Postgres was unreachable for its renewal) and the money is spent elsewhere.
    await sql(testEnv, `update balance_holds set expires_at = now() - interval '1 second' where request_id = $1`, [
      `lease:${walletOfToken(session.token)}`,
    ]);
    await sql(testEnv, `update wallets set balance = 0 where id = $1`, [session.walletId]);
    await reader.cancel();
    await finished();
    await settled(testEnv);
    await expectBookedAsReceivable(session, requestId);
  });

  /** Booked once in full, the shortfall a receivable: the wallet below zero. */
  async function expectBookedAsReceivable(session: { walletId: string }, requestId: string) {
    const rows = await sql<{ receivable_usd: string; retail_usd: string }>(
      testEnv,
      'select receivable_usd::text, retail_usd::text from usage_events where client_request_id = $1',
      [requestId],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.receivable_usd).toBe(rows[0]!.retail_usd);
    // Below zero: the receivable (amounts compared through the money module, never as floats).
    expect(compareUsd(parseDatabaseAmount((await wallet(testEnv, session.walletId)).balance), usdFromUnits(0n))).toBe(-1);
  }
});

describe('defect 4: aborts do not cut the bill', () => {
  it('an abort before the first content token bills the input (and the provider’s output count, read after the client left)', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const upstream = fakeUpstream(() => {
      const encoder = new TextEncoder();
      return new Response(
        new ReadableStream<Uint8Array>({
          async start(controller) {
            controller.enqueue(encoder.encode(openAiSse([openAiChunk({ role: 'assistant', content: '' })], false).join('')));
            await gate;
            controller.enqueue(
              encoder.encode(
                openAiSse([
                  openAiChunk({ content: '你好世界' }),
                  openAiChunk({}, 'stop'),
                  openAiChunk({}, null, { prompt_tokens: 40, completion_tokens: 6, total_tokens: 46 }),
                ]).join(''),
              ),
            );
            controller.close();
          },
        }),
        { headers: { 'content-type': 'text/event-stream' } },
      );
    });
    const session = await fundedSession(testEnv);
    const { response, requestId, finished } = await openStream(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      platformBody,
    );
    const reader = await readUntil(response, '"role":"assistant"');
    await reader.cancel();
    release();
    await finished();
    await settled(testEnv);
    const [row] = await usageRows(testEnv, requestId);
    expect(row).toMatchObject({ route_mode: 'platform', input_tokens: 40, output_tokens: 6, estimated: false });
    expect(row!.retail_usd).not.toBe('0.00000000');
  });

  it('an abort with no count to be had bills upper bounds (CJK is never under-counted), marked estimated', async () => {
    const upstream = fakeUpstream(
      (_request, signal) =>
        openSseResponse(
          openAiSse([openAiChunk({ role: 'assistant', content: '' }), openAiChunk({ content: '日本語の長い物語' })], false),
          signal,
        ).response,
    );
    const session = await fundedSession(shortCalls);
    const prompt = '日本語で長い物語を書いてください 🎌🎌';
    const { response, requestId, finished } = await openStream(gatewayWith({ upstreamFetch: upstream.fetch }), shortCalls, session.token, {
      ...platformBody,
      messages: [userMessage(prompt)],
      max_tokens: 200,
    });
    const reader = await readUntil(response, '物語');
    await reader.cancel();
    await finished();
    await settled(shortCalls);
    const [row] = await usageRows(shortCalls, requestId);
    expect(row).toMatchObject({ estimated: true, output_tokens: 200 });
    expect(row!.input_tokens).toBeGreaterThanOrEqual(new TextEncoder().encode(prompt).byteLength);
  });
});
