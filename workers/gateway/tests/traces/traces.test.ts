/**
 * Traces out (docs/traces.md): a call made through the gateway reaches the app's OTLP endpoint as
 * one span named by the GenAI semantic conventions, with the tokens and charge of its usage record
 * and never a word of its prompt or answer; a failing endpoint is retried by the queue with a growing
 * delay and its failures show in GET; a private endpoint is never fetched.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from 'cloudflare:test';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { encodeBase64 } from '#shared/provider-keys/keyring.ts';
import { deliverTraceBatch } from '#shared/traces/deliver-traces.ts';
import { openTraceHeaders } from '#shared/traces/trace-export.ts';
import { fakeUpstream, jsonResponse, openAiCompletion, type RecordedRequest } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayTestEnv, gatewayWith, newRequestId, settled } from '../../../test/gateway-kit.ts';
import { adminToken, api, call, createTestEnv, demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { traceReceiver } from '../../../test/trace-receiver.ts';

type Body = Record<string, any>;
type Span = {
  traceId: string;
  spanId: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Body[];
  status: Body;
};

let testEnv: TestEnv;
let demoAppId: string;
const headerValue = 'otlp-ingest-key-abcdefghijklmnop';
const promptText = 'purple-elephant-prompt-42';
const answerText = 'zebra-completion-answer-17';

beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
  const [app] = await sql<{ id: string }>(testEnv, 'select id from apps where public_app_id = $1', [demoPublicAppId]);
  demoAppId = app!.id;
});

afterEach(() => {
  traceReceiver.fetch = async () => new Response('no receiver set', { status: 503 });
});

async function exportTo(endpoint: string) {
  const response = await call(api(), testEnv, `/v1/developer/apps/${demoPublicAppId}/traces`, {
    method: 'PUT',
    json: { endpoint, headers: { 'x-ingest-key': headerValue } },
    token: developerKey,
  });
  expect(response.status).toBe(200);
}

async function traceState() {
  const response = await call(api(), testEnv, `/v1/developer/apps/${demoPublicAppId}/traces`, { token: developerKey });
  return ((await response.json()) as Body).delivery;
}

async function received(requests: RecordedRequest[], spans: number, timeoutMs = 20_000): Promise<Span[]> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const all = requests.flatMap((request) =>
      (request.body as Body).resourceSpans.flatMap((r: Body) => r.scopeSpans.flatMap((s: Body) => s.spans)),
    );
    if (all.length >= spans || Date.now() > until) return all as Span[];
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const attributesOf = (span: Span) => Object.fromEntries(span.attributes.map((entry) => [entry.key, Object.values(entry.value as Body)[0]]));

describe('a call through the gateway', () => {
  it('reaches the app’s endpoint as one span with the usage record’s tokens and charge, and no content', async () => {
    await exportTo('https://otlp.example.com/v1/traces');
    const receiver = fakeUpstream(() => new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } }));
    traceReceiver.fetch = receiver.fetch;

    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion(answerText)));
    const requestId = newRequestId();
    const answer = await chat(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      testEnv,
      session.token,
      { model: 'openai:gpt-4o-mini', messages: [{ role: 'user', content: promptText }], max_tokens: 50 },
      requestId,
    );
    expect(answer.status).toBe(200);
    const callId = answer.headers.get('x-faucet-call-id')!;
    // A call the wallet refuses (no balance) is traced too, as a failure.
    const broke = await fundedSession(testEnv, '0.00000000');
    const refused = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, broke.token, {
      model: 'openai:gpt-4o-mini',
      messages: [{ role: 'user', content: promptText }],
      max_tokens: 50,
    });
    expect(refused.status).toBe(402);
    await settled(testEnv);

    const spans = await received(receiver.requests, 2);
    expect(spans).toHaveLength(2);
    const request = receiver.requests[0]!;
    expect(request.method).toBe('POST');
    expect(request.url).toBe('https://otlp.example.com/v1/traces');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['x-ingest-key'] === headerValue).toBe(true);
    expect((request.body as Body).resourceSpans[0].resource.attributes).toContainEqual({
      key: 'service.name',
      value: { stringValue: 'faucet' },
    });

    const [usage] = await sql<{ input_tokens: number; output_tokens: number; retail_usd: string; created_at: Date }>(
      testEnv,
      'select input_tokens, output_tokens, retail_usd::text from usage_events where call_id = $1',
      [callId],
    );
    const [logged] = await sql<{ created_at: string; total_ms: number }>(
      testEnv,
      'select created_at, total_ms from gateway_call_log where id = $1',
      [callId],
    );
    const span = spans.find((candidate) => attributesOf(candidate)['faucet.call_id'] === callId)!;
    expect(span.traceId).toBe(callId.replace(/-/g, ''));
    expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(span.name).toBe('chat gpt-4o-mini');
    expect(span.startTimeUnixNano).toBe((BigInt(new Date(logged!.created_at).getTime()) * 1_000_000n).toString());
    expect(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)).toBe(BigInt(logged!.total_ms) * 1_000_000n);
    expect(attributesOf(span)).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'openai:gpt-4o-mini',
      'gen_ai.response.model': 'gpt-4o-mini',
      'gen_ai.usage.input_tokens': String(usage!.input_tokens),
      'gen_ai.usage.output_tokens': String(usage!.output_tokens),
      'faucet.call_id': callId,
      'faucet.surface': 'chat.completions',
      'faucet.outcome': 'answered',
      'faucet.route': 'platform',
      'faucet.feature': 'chat',
      'faucet.charge_usd': usage!.retail_usd,
      'faucet.usage_estimated': false,
      'faucet.stream': false,
    });
    expect(usage!.input_tokens).toBe(11);
    expect(usage!.output_tokens).toBe(7);
    expect(span.status).toEqual({ code: 0 });

    const failure = spans.find((candidate) => candidate !== span)!;
    expect(attributesOf(failure)).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'error.type': 'insufficient_balance',
      'faucet.outcome': 'refused',
      'faucet.charge_usd': '0.00000000',
    });
    expect(attributesOf(failure)['gen_ai.usage.input_tokens']).toBeUndefined();
    expect(failure.status.code).toBe(2);

    const everything = JSON.stringify(receiver.requests.map((sent) => sent.body));
    expect(everything).not.toContain(promptText);
    expect(everything).not.toContain(answerText);
    expect(everything).not.toContain(headerValue);

    const state = await traceState();
    expect(state).toMatchObject({ state: 'ok', consecutive_failures: 0, last_error: null });
  });
});

describe('a failing endpoint', () => {
  it('gets the queue’s retries (max_retries), then no more, and GET shows it failing', async () => {
    await exportTo('https://otlp.example.com/v1/traces');
    const receiver = fakeUpstream(() => new Response('unavailable', { status: 503 }));
    traceReceiver.fetch = receiver.fetch;
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('ok')));
    const answer = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'openai:gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 20,
    });
    expect(answer.status).toBe(200);
    await settled(testEnv);

    // wrangler.toml [env.test]: max_retries = 2, so three attempts (retried without delay there), then the dead-letter queue.
    const attempts = 3;
    const until = Date.now() + 60_000;
    while (receiver.requests.length < attempts && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.requests).toHaveLength(attempts);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(receiver.requests).toHaveLength(attempts);
    expect(await traceState()).toMatchObject({
      state: 'failing',
      consecutive_failures: attempts,
      last_error: 'the endpoint answered HTTP 503',
      last_success_at: null,
    });
  });
});

describe('the traces consumer', () => {
  /** A request-log row of the demo app (an answered call), written as a flush writes it. */
  async function loggedCall(): Promise<string> {
    // No export while the call is flushed: only the batches below deliver it.
    await call(api(), testEnv, `/v1/developer/apps/${demoPublicAppId}/traces`, { method: 'DELETE', token: developerKey });
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('ok')));
    const answer = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, {
      model: 'openai:gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 20,
    });
    expect(answer.status).toBe(200);
    await settled(testEnv);
    return answer.headers.get('x-faucet-call-id')!;
  }

  const batchOf = (callId: string, attempts: number) =>
    createMessageBatch('faucet-traces-test', [
      { id: `m-${attempts}`, timestamp: new Date(), attempts, body: { appId: demoAppId, callIds: [callId] } },
    ]);

  it('retries a failing endpoint with a growing delay, and GET shows the failures', async () => {
    const callId = await loggedCall();
    await exportTo('https://otlp.example.com/v1/traces');
    const receiver = fakeUpstream(() => new Response('busy', { status: 503 }));
    for (const [attempts, delay] of [
      [1, 5],
      [2, 10],
      [3, 20],
    ] as const) {
      // createMessageBatch's result does not keep a retry's delay: a message of our own shows it.
      const message = {
        id: `m-${attempts}`,
        timestamp: new Date(),
        attempts,
        body: { appId: demoAppId, callIds: [callId] },
        ack: vi.fn(),
        retry: vi.fn(),
      };
      // The production delays (the test worker retries without waiting: TRACE_RETRY_BASE_SECONDS = 0).
      await deliverTraceBatch(
        { queue: 'faucet-traces-test', messages: [message] } as unknown as MessageBatch,
        { ...testEnv, TRACE_RETRY_BASE_SECONDS: undefined },
        { fetch: receiver.fetch },
      );
      expect(message.retry).toHaveBeenCalledWith({ delaySeconds: delay });
      expect(message.ack).not.toHaveBeenCalled();
    }
    expect(receiver.requests).toHaveLength(3);
    expect(await traceState()).toMatchObject({
      state: 'failing',
      consecutive_failures: 3,
      last_error: 'the endpoint answered HTTP 503',
      last_error_at: expect.any(String),
    });

    // A request the endpoint refuses outright (400) is not retried.
    const refusing = fakeUpstream(() => new Response('bad', { status: 400 }));
    const batch = batchOf(callId, 1);
    const ctx = createExecutionContext();
    await deliverTraceBatch(batch, testEnv, { fetch: refusing.fetch });
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(['m-1']);

    // The endpoint back: one success clears the failures.
    const healthy = fakeUpstream(() => new Response('{}', { status: 200 }));
    await deliverTraceBatch(batchOf(callId, 4), testEnv, { fetch: healthy.fetch });
    expect(await traceState()).toMatchObject({ state: 'ok', consecutive_failures: 0 });
  });

  it('never fetches a private endpoint stored before the guard (or outside production)', async () => {
    const callId = await loggedCall();
    await exportTo('https://otlp.example.com/v1/traces');
    await sql(testEnv, `update app_trace_exports set endpoint = 'https://192.168.1.20/v1/traces' where app_id = $1`, [demoAppId]);
    const receiver = fakeUpstream(() => new Response('{}', { status: 200 }));
    const batch = batchOf(callId, 1);
    const ctx = createExecutionContext();
    await deliverTraceBatch(batch, testEnv, { fetch: receiver.fetch });
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(['m-1']);
    expect(receiver.requests).toHaveLength(0);
    expect((await traceState()).last_error).toMatch(/^refused: /);

    // Loopback only where the local setting names it, and never in production.
    await sql(testEnv, `update app_trace_exports set endpoint = 'http://127.0.0.1:4318/v1/traces' where app_id = $1`, [demoAppId]);
    const local = { ...testEnv, UPSTREAM_ALLOW_LOOPBACK: '127.0.0.1:4318' };
    await deliverTraceBatch(batchOf(callId, 1), local, { fetch: receiver.fetch });
    expect(receiver.requests).toHaveLength(1);
    await deliverTraceBatch(batchOf(callId, 1), { ...local, ENVIRONMENT: 'production' }, { fetch: receiver.fetch });
    expect(receiver.requests).toHaveLength(1);
  });

  it('sends nothing for a disabled export, nor with headers it can no longer open (and says so)', async () => {
    const callId = await loggedCall();
    const receiver = fakeUpstream(() => new Response('{}', { status: 200 }));
    const disabled = await call(api(), testEnv, `/v1/developer/apps/${demoPublicAppId}/traces`, {
      method: 'PUT',
      json: { endpoint: 'https://otlp.example.com/v1/traces', enabled: false },
      token: developerKey,
    });
    expect(disabled.status).toBe(200);
    await deliverTraceBatch(batchOf(callId, 1), testEnv, { fetch: receiver.fetch });
    expect(receiver.requests).toHaveLength(0);

    await exportTo('https://otlp.example.com/v1/traces');
    await sql(testEnv, 'update app_trace_exports set headers_key_version = 9 where app_id = $1', [demoAppId]);
    const batch = batchOf(callId, 1);
    const ctx = createExecutionContext();
    await deliverTraceBatch(batch, testEnv, { fetch: receiver.fetch });
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(['m-1']);
    expect(receiver.requests).toHaveLength(0);
    expect(await traceState()).toMatchObject({
      state: 'failing',
      last_error: 'the stored headers could not be opened: set the export again',
    });
  });

  it('drops a message of an app without an enabled export, and a malformed one, unsent', async () => {
    const other = await createTestEnv();
    const receiver = fakeUpstream(() => new Response('{}', { status: 200 }));
    const batch = createMessageBatch('faucet-traces-test', [
      { id: 'a', timestamp: new Date(), attempts: 1, body: { appId: demoAppId, callIds: [crypto.randomUUID()] } },
      { id: 'b', timestamp: new Date(), attempts: 1, body: { appId: 'not-a-uuid', callIds: ['x'] } },
    ]);
    const ctx = createExecutionContext();
    await deliverTraceBatch(batch, other, { fetch: receiver.fetch });
    expect((await getQueueResult(batch, ctx)).explicitAcks.sort()).toEqual(['a', 'b']);
    expect(receiver.requests).toHaveLength(0);
  });
});

describe('rotating the encryption key', () => {
  it('re-seals the export’s headers: the new key alone opens them, and the headers sent are the ones set', async () => {
    await exportTo('https://otlp.example.com/v1/traces');
    const newEntry = `v2:${encodeBase64(crypto.getRandomValues(new Uint8Array(32)))}`;
    const rotating = { ...testEnv, PROVIDER_KEY_ENCRYPTION_KEY: `${newEntry},${testEnv.PROVIDER_KEY_ENCRYPTION_KEY}` };
    const result = await call(api(), rotating, '/v1/admin/provider-keys/re-encrypt', { method: 'POST', token: adminToken });
    expect(result.status).toBe(200);
    expect(((await result.json()) as Body).trace_headers).toEqual({ re_encrypted: 1, unreadable: 0, remaining: 0 });
    const [row] = await sql<{ headers_ciphertext: string; headers_iv: string; headers_key_version: number }>(
      testEnv,
      'select headers_ciphertext, headers_iv, headers_key_version from app_trace_exports where app_id = $1',
      [demoAppId],
    );
    expect(row!.headers_key_version).toBe(2);
    const opened = await openTraceHeaders({ ...testEnv, PROVIDER_KEY_ENCRYPTION_KEY: newEntry }, demoAppId, {
      ciphertext: row!.headers_ciphertext,
      iv: row!.headers_iv,
      keyVersion: row!.headers_key_version,
    });
    expect(opened['x-ingest-key'] === headerValue).toBe(true);
  });
});
