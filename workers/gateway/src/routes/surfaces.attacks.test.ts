/**
 * An attacker's scripts against the three surfaces that ride the chat pipeline: `POST /v1/responses`,
 * `POST /v1/messages` and `POST /v1/embeddings`. Each script ends on the upstream audit and the ledger's
 * reconciliation (`expectBooksAgree`: every upstream call billed once, with at least the tokens the
 * provider reported) and, where it matters, on what the wallet still holds. The happy paths of the
 * surfaces are in surfaces.test.ts; the chat surface's attacks in chat-completions.*.test.ts.
 */
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { compareUsd, formatUsd, parseDatabaseAmount, parseWireAmount, subtractUsd } from '#shared/money/index.ts';
import { sql, type TestEnv } from '../../../test/harness.ts';
import {
  fakeUpstream,
  jsonResponse,
  openAiChunk,
  openAiCompletion,
  openAiSse,
  sseResponse,
  type FakeUpstream,
  type RecordedRequest,
} from '../../../test/fake-upstream.ts';
import {
  fundedSession,
  type GatewayApp,
  gatewayTestEnv,
  gatewayWith,
  newRequestId,
  settled,
  usageRows,
  wallet,
  allRegistered,
} from '../../../test/gateway-kit.ts';
import { expectBooksAgree } from '../../../test/wallet-kit.ts';

/** Read on for the provider's usage this long after a client leaves (production: 20 s). */
const drainMs = 300;

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({
    OPENAI_API_KEY: 'sk-platform-pool-test',
    ANTHROPIC_API_KEY: 'sk-ant-platform-pool-test',
    ANTHROPIC_BASE_URL: 'https://anthropic-proxy.example.com/',
    UPSTREAM_DRAIN_MS: String(drainMs),
  });
});

type Body = Record<string, unknown>;
type Session = Awaited<ReturnType<typeof fundedSession>>;
type Tokens = { input: number; output: number };

// ---------------------------------------------------------------------------------------------------
// The surfaces, as their clients call them
// ---------------------------------------------------------------------------------------------------

type SurfaceName = 'Responses' | 'Messages' | 'embeddings';

interface Surface {
  name: SurfaceName;
  path: string;
  headers(token: string, requestId: string): Record<string, string>;
  /** The error of a refusal, read from the surface's own envelope (DESIGN §4, or Anthropic's on Messages). */
  errorOf(body: Body): { code?: string; type?: string; request_id?: string };
}

const openAiEnvelope = (body: Body) => body.error as { code?: string; request_id?: string };

const responses: Surface = {
  name: 'Responses',
  path: '/v1/responses',
  headers: (token, requestId) => ({ authorization: `Bearer ${token}`, 'x-request-id': requestId }),
  errorOf: openAiEnvelope,
};

const messages: Surface = {
  name: 'Messages',
  path: '/v1/messages',
  // As Claude Code sends them.
  headers: (token, requestId) => ({
    'x-api-key': token,
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
    'x-request-id': requestId,
  }),
  errorOf: (body) => {
    // Anthropic's envelope, which Faucet's clients read too: `type` at the top, the request id twice.
    expect(body).toMatchObject({ type: 'error', request_id: (body.error as Body | undefined)?.request_id });
    return body.error as { code?: string; type?: string; request_id?: string };
  },
};

const embeddings: Surface = {
  name: 'embeddings',
  path: '/v1/embeddings',
  headers: (token, requestId) => ({ authorization: `Bearer ${token}`, 'x-request-id': requestId }),
  errorOf: openAiEnvelope,
};

/** A small call on each surface, on a model the platform pool serves through the fake upstream. */
const smallAsk: Record<SurfaceName, Body> = {
  Responses: { model: 'openai:gpt-4o-mini', input: 'Say hello', max_output_tokens: 50 },
  Messages: { model: 'openai:gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'Say hello' }] },
  embeddings: { model: 'openai:text-embedding-3-small', input: ['Say hello'] },
};

function request(surface: Surface, body: Body, headers: Record<string, string>): Request {
  return new Request(`http://faucet.test${surface.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** A whole call as a client makes it, kept alive until its work under waitUntil is done. */
async function send(app: GatewayApp, surface: Surface, body: Body, headers: Record<string, string>) {
  const ctx = createExecutionContext();
  const response = await app.fetch(request(surface, body, headers), testEnv, ctx);
  const text = await response.text();
  await waitOnExecutionContext(ctx);
  return { status: response.status, text, json: () => JSON.parse(text) as Body };
}

/** A streamed call whose body the test reads (and abandons) itself; `finished` waits for the work that outlives it. */
async function open(app: GatewayApp, surface: Surface, body: Body, headers: Record<string, string>) {
  const ctx = createExecutionContext();
  const response = await app.fetch(request(surface, body, headers), testEnv, ctx);
  return { response, finished: () => waitOnExecutionContext(ctx) };
}

/** Reads a live body until `marker` has been received. */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, marker: string): Promise<string> {
  const decoder = new TextDecoder();
  let received = '';
  while (!received.includes(marker)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended before "${marker}"`);
    received += decoder.decode(value, { stream: true });
  }
  return received;
}

/** The `event:` / `data:` pairs of an SSE body. */
function events(text: string): Array<{ event: string | null; data: Body }> {
  return text
    .split(/\n\n/)
    .map((block) => block.trim())
    .filter((block) => block !== '')
    .map((block) => ({
      event: /^event: (.+)$/m.exec(block)?.[1] ?? null,
      data: JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? '{}') as Body,
    }));
}

const utf8Bytes = (text: string) => new TextEncoder().encode(text).byteLength;

// ---------------------------------------------------------------------------------------------------
// Providers, as the fake upstream plays them
// ---------------------------------------------------------------------------------------------------

/** Tokens as OpenAI reports them (and as the audit takes them). */
const usageOf = (tokens: Tokens) => ({
  prompt_tokens: tokens.input,
  completion_tokens: tokens.output,
  total_tokens: tokens.input + tokens.output,
});

const anthropicEvent = (event: Body) => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`;

/** Anthropic's stream of `words`, one delta each; `usage` null: a provider that reports none. */
function anthropicStream(words: string[], usage: Tokens | null): string[] {
  return [
    {
      type: 'message_start',
      message: { id: 'msg_up', model: 'claude-haiku-4-5', ...(usage && { usage: { input_tokens: usage.input, output_tokens: 1 } }) },
    },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    ...words.map((word) => ({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: word } })),
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn' }, ...(usage && { usage: { output_tokens: usage.output } }) },
    { type: 'message_stop' },
  ].map(anthropicEvent);
}

/** OpenAI's chat stream of `words`, one chunk each; `usage` null: a provider that reports none. */
function openAiStream(words: string[], usage: Tokens | null): string[] {
  return openAiSse([
    openAiChunk({ role: 'assistant', content: '' }),
    ...words.map((word) => openAiChunk({ content: word })),
    openAiChunk({}, 'stop'),
    ...(usage ? [openAiChunk({}, null, usageOf(usage))] : []),
  ]);
}

/**
 * A provider still generating: it streams `opening` at once, then nothing until `finish()` sends
 * `closing` and ends the stream (never, for one that stays silent; too late, for one the gateway
 * stopped already). `stopped` resolves when the gateway stops reading it.
 */
function generatingUpstream(opening: string[], closing: string[]) {
  const encoder = new TextEncoder();
  let finish: () => void = () => undefined;
  let stopped: Promise<void> = new Promise(() => undefined);
  const upstream = fakeUpstream((_request, signal) => {
    let isStopped = false;
    let markStopped: () => void = () => undefined;
    stopped = new Promise((resolve) => {
      markStopped = () => {
        isStopped = true;
        resolve();
      };
    });
    signal.addEventListener('abort', () => markStopped(), { once: true });
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const event of opening) controller.enqueue(encoder.encode(event));
        finish = () => {
          if (isStopped) return;
          for (const event of closing) controller.enqueue(encoder.encode(event));
          controller.close();
        };
      },
      cancel: () => markStopped(),
    });
    return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
  });
  return { ...upstream, finish: () => finish(), stopped: () => stopped };
}

/** An OpenAI completion that calls one function. */
function toolCallCompletion(callId: string, name: string, args: Body, usage: Tokens) {
  const completion = openAiCompletion('', usageOf(usage));
  const [choice] = completion.choices;
  return {
    ...completion,
    choices: [
      {
        ...choice,
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: callId, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
        },
        finish_reason: 'tool_calls',
      },
    ],
  };
}

/** OpenAI's embeddings answer for `count` inputs; `promptTokens` null: a provider that reports no usage. */
function embeddingsAnswer(count: number, promptTokens: number | null) {
  return jsonResponse({
    object: 'list',
    data: Array.from({ length: count }, (_, index) => ({ object: 'embedding', index, embedding: [0.5, -0.25] })),
    model: 'text-embedding-3-small',
    ...(promptTokens === null ? {} : { usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } }),
  });
}

/** The chat messages the gateway sent the provider on its `index`th call. */
function sentMessages(upstream: FakeUpstream, index: number): Body[] {
  return (upstream.requests[index]?.body as { messages?: Body[] } | undefined)?.messages ?? [];
}

/** The audit against what the provider reported (or, for one that reported nothing, what it may bill at most). */
function expectAuditAgainst(upstream: FakeUpstream, tokens: Tokens | ((request: RecordedRequest) => Tokens)) {
  return expectBooksAgree(testEnv, upstream.requests, (recorded) => usageOf(typeof tokens === 'function' ? tokens(recorded) : tokens));
}

// ---------------------------------------------------------------------------------------------------
// What the books say
// ---------------------------------------------------------------------------------------------------

/** The one booking of a request id, once every settled call is booked. */
async function bookedOnce(requestId: string) {
  await settled(testEnv);
  const rows = await usageRows(testEnv, requestId);
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

/** A refusal: nothing reached the provider, nothing is held or booked, the balance is whole. */
async function expectNothingSentHeldOrBooked(upstream: FakeUpstream, session: Session, requestId: string) {
  expect(upstream.requests).toEqual([]);
  await settled(testEnv);
  expect(await wallet(testEnv, session.walletId)).toEqual({ balance: '1.00000000', held: '0.00000000', available: '1.00000000' });
  expect(await usageRows(testEnv, requestId)).toEqual([]);
}

/** An upstream that must not be reached. */
const forbiddenUpstream = () =>
  fakeUpstream(() => {
    throw new Error('the upstream must not be called');
  });

// ---------------------------------------------------------------------------------------------------
// The scripts
// ---------------------------------------------------------------------------------------------------

describe('a streamed answer whose client goes away', () => {
  const prompt = 'Tell me a very long story';
  const maxTokens = 300;
  const streamed = [
    {
      surface: responses,
      body: { model: 'openai:gpt-4o-mini', input: prompt, max_output_tokens: maxTokens, stream: true },
      answer: openAiStream(['Once', ' upon', ' a time'], { input: 11, output: 7 }),
      reported: { input: 11, output: 7 },
      // The role chunk and the first word.
      firstWordAt: 2,
      firstByteMarker: 'response.output_text.delta',
    },
    {
      surface: messages,
      body: { model: 'anthropic:claude-haiku-4-5', max_tokens: maxTokens, messages: [{ role: 'user', content: prompt }], stream: true },
      answer: anthropicStream(['Once', ' upon', ' a time'], { input: 25, output: 9 }),
      reported: { input: 25, output: 9 },
      // message_start, content_block_start and the first word.
      firstWordAt: 3,
      firstByteMarker: 'content_block_delta',
    },
  ];

  describe.each(streamed)('on $surface.name', ({ surface, body, answer, reported, firstWordAt, firstByteMarker }) => {
    /** Booked at the bound: every output token the call may make, the input at the prompt's byte bound, marked estimated. */
    async function expectBookedAtBound(session: Session, requestId: string, upstream: FakeUpstream) {
      const row = await bookedOnce(requestId);
      expect(row).toMatchObject({ estimated: true, output_tokens: maxTokens });
      expect(row.input_tokens).toBeGreaterThanOrEqual(utf8Bytes(prompt));
      expect((await wallet(testEnv, session.walletId)).held).toBe('0.00000000');
      // Cut while generating, the provider may bill up to the output bound: still covered.
      await expectAuditAgainst(upstream, { input: reported.input, output: maxTokens });
    }

    async function expectBookedAsReported(session: Session, requestId: string, upstream: FakeUpstream) {
      expect(await bookedOnce(requestId)).toMatchObject({ estimated: false, input_tokens: reported.input, output_tokens: reported.output });
      expect((await wallet(testEnv, session.walletId)).held).toBe('0.00000000');
      await expectAuditAgainst(upstream, reported);
    }

    /** A funded end user starts the streamed call against `upstream`. */
    async function start(upstream: FakeUpstream) {
      const session = await fundedSession(testEnv);
      const requestId = newRequestId();
      const call = await open(gatewayWith({ upstreamFetch: upstream.fetch }), surface, body, surface.headers(session.token, requestId));
      expect(call.response.status).toBe(200);
      return { session, requestId, ...call };
    }

    it('before its first byte, the provider then silent: booked at the bound once the drain ends, the provider stopped, nothing held', async () => {
      const upstream = generatingUpstream([], answer);
      const { session, requestId, response, finished } = await start(upstream);
      await response.body!.cancel();
      await finished();
      await upstream.stopped();
      await expectBookedAtBound(session, requestId, upstream);
    });

    it('before its first byte, the provider finishing within the drain: booked with the provider’s usage', async () => {
      const upstream = generatingUpstream([], answer);
      const { session, requestId, response, finished } = await start(upstream);
      await response.body!.cancel();
      upstream.finish();
      await finished();
      await expectBookedAsReported(session, requestId, upstream);
    });

    it('after its first byte, the provider then silent: booked at the bound, the provider stopped, nothing held', async () => {
      const upstream = generatingUpstream(answer.slice(0, firstWordAt), answer.slice(firstWordAt));
      const { session, requestId, response, finished } = await start(upstream);
      const reader = response.body!.getReader();
      expect(await readUntil(reader, firstByteMarker)).toContain('Once');
      await reader.cancel();
      await finished();
      await upstream.stopped();
      await expectBookedAtBound(session, requestId, upstream);
    });

    it('after its first byte, the provider finishing within the drain: booked with the provider’s usage', async () => {
      const upstream = generatingUpstream(answer.slice(0, firstWordAt), answer.slice(firstWordAt));
      const { session, requestId, response, finished } = await start(upstream);
      const reader = response.body!.getReader();
      await readUntil(reader, firstByteMarker);
      await reader.cancel();
      upstream.finish();
      await finished();
      await expectBookedAsReported(session, requestId, upstream);
    });
  });

  // A running count some OpenAI-compatible upstreams repeat on content chunks is not the whole count:
  // a client that leaves after one must not end the drain and book that partial count (found by this
  // test: it booked 1 output token where the provider billed 9; streaming/metered-stream.ts).
  it('on Responses, a running usage count on a content chunk does not end the drain: booked with the provider’s final count', async () => {
    const session = await fundedSession(testEnv);
    const running = { ...openAiChunk({ content: 'Once' }), usage: usageOf({ input: 11, output: 1 }) };
    const opening = openAiSse([openAiChunk({ role: 'assistant', content: '' }), running], false);
    const closing = openAiSse([
      openAiChunk({ content: ' upon a time' }),
      openAiChunk({}, 'stop'),
      openAiChunk({}, null, usageOf({ input: 11, output: 9 })),
    ]);
    const upstream = generatingUpstream(opening, closing);
    const requestId = newRequestId();
    const { response, finished } = await open(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      responses,
      { model: 'openai:gpt-4o-mini', input: 'Tell me a very long story', max_output_tokens: 300, stream: true },
      responses.headers(session.token, requestId),
    );
    const reader = response.body!.getReader();
    await readUntil(reader, 'response.output_text.delta');
    await reader.cancel();
    upstream.finish();
    await finished();
    expect(await bookedOnce(requestId)).toMatchObject({ estimated: false, input_tokens: 11, output_tokens: 9 });
    await expectAuditAgainst(upstream, { input: 11, output: 9 });
  });

  it('on embeddings (never streamed), a client gone before the answer does not stop the call being booked with the provider’s tokens', async () => {
    let answer: () => void = () => undefined;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const upstream = fakeUpstream(async () => {
      await answered;
      return embeddingsAnswer(1, 6);
    });
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const background: Promise<unknown>[] = [];
    const ctx = { waitUntil: (work: Promise<unknown>) => void background.push(work), passThroughOnException: () => {}, props: {} };
    // The client's response is never read: it has gone.
    const responding = gatewayWith({ upstreamFetch: upstream.fetch }).fetch(
      request(embeddings, smallAsk.embeddings, embeddings.headers(session.token, requestId)),
      testEnv,
      ctx as unknown as ExecutionContext,
    );
    await expect.poll(() => upstream.requests.length).toBe(1);
    answer();
    await allRegistered(background);
    expect(await bookedOnce(requestId)).toMatchObject({ estimated: false, input_tokens: 6, output_tokens: 0 });
    expect((await wallet(testEnv, session.walletId)).held).toBe('0.00000000');
    await expectAuditAgainst(upstream, { input: 6, output: 0 });
    await responding;
  });
});

describe('a provider that reports no usage: booked at an upper bound, marked estimated, never 0', () => {
  const words = ['Once', ' upon', ' a', ' time'];
  const streamedBytes = utf8Bytes(words.join(''));

  it('on Responses, streamed: the output at the bytes it streamed, the input at the prompt’s byte bound', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => sseResponse(openAiStream(words, null)));
    const requestId = newRequestId();
    const answer = await send(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      responses,
      { model: 'openai:gpt-4o-mini', input: 'Tell me a story', max_output_tokens: 300, stream: true },
      responses.headers(session.token, requestId),
    );
    expect(events(answer.text).at(-1)).toMatchObject({ event: 'response.completed', data: { response: { faucet: { estimated: true } } } });
    const row = await bookedOnce(requestId);
    expect(row).toMatchObject({ estimated: true, output_tokens: streamedBytes });
    expect(row.input_tokens).toBeGreaterThanOrEqual(utf8Bytes('Tell me a story'));
    expect(row.retail_usd).not.toBe('0.00000000');
    // A byte-level BPE token is at least a byte: whatever the provider bills for this, it is covered.
    await expectAuditAgainst(upstream, { input: utf8Bytes('Tell me a story'), output: words.length });
  });

  it('on Responses, not streamed: the output at the bytes of its answer', async () => {
    const session = await fundedSession(testEnv);
    const { usage: _none, ...unreported } = openAiCompletion('Once upon a time');
    const upstream = fakeUpstream(() => jsonResponse(unreported));
    const requestId = newRequestId();
    const answer = await send(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      responses,
      { model: 'openai:gpt-4o-mini', input: 'Tell me a story', max_output_tokens: 300 },
      responses.headers(session.token, requestId),
    );
    expect(answer.status).toBe(200);
    const row = await bookedOnce(requestId);
    expect(row).toMatchObject({ estimated: true, output_tokens: utf8Bytes('Once upon a time') });
    expect(row.input_tokens).toBeGreaterThanOrEqual(utf8Bytes('Tell me a story'));
    await expectAuditAgainst(upstream, { input: utf8Bytes('Tell me a story'), output: 4 });
  });

  it('on Messages to an OpenAI-compatible model, streamed: the output at the bytes it streamed', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => sseResponse(openAiStream(words, null)));
    const requestId = newRequestId();
    const answer = await send(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      messages,
      { model: 'openai:gpt-4o-mini', max_tokens: 300, messages: [{ role: 'user', content: 'Tell me a story' }], stream: true },
      messages.headers(session.token, requestId),
    );
    expect(events(answer.text).find((event) => event.event === 'message_delta')?.data).toMatchObject({ faucet: { estimated: true } });
    const row = await bookedOnce(requestId);
    expect(row).toMatchObject({ estimated: true, output_tokens: streamedBytes });
    expect(row.input_tokens).toBeGreaterThanOrEqual(utf8Bytes('Tell me a story'));
    await expectAuditAgainst(upstream, { input: utf8Bytes('Tell me a story'), output: words.length });
  });

  // An Anthropic stream or message without usage counts is unreported, not zero (found by this test:
  // the adapter read `usage: {}` as 0 and 0 and the call was charged nothing; reportedUsage in
  // providers/anthropic/from-anthropic-response.ts).
  it('on Messages to an Anthropic model, streamed without usage: booked at the bound, not at 0', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => sseResponse(anthropicStream(words, null)));
    const requestId = newRequestId();
    const answer = await send(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      messages,
      { model: 'anthropic:claude-haiku-4-5', max_tokens: 300, messages: [{ role: 'user', content: 'Tell me a story' }], stream: true },
      messages.headers(session.token, requestId),
    );
    expect(answer.status).toBe(200);
    const row = await bookedOnce(requestId);
    expect(row.estimated).toBe(true);
    expect(row.input_tokens).toBeGreaterThanOrEqual(utf8Bytes('Tell me a story'));
    expect(row.output_tokens).toBe(streamedBytes);
    await expectAuditAgainst(upstream, { input: utf8Bytes('Tell me a story'), output: words.length });
  });

  // The same on a whole answer: `usage: {}` is no count.
  it('on Messages to an Anthropic model, not streamed, with an empty usage: booked at the bound, not at 0', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() =>
      jsonResponse({
        id: 'msg_up',
        type: 'message',
        role: 'assistant',
        model: 'claude-haiku-4-5',
        content: [{ type: 'text', text: words.join('') }],
        stop_reason: 'end_turn',
        usage: {},
      }),
    );
    const requestId = newRequestId();
    const answer = await send(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      messages,
      { model: 'anthropic:claude-haiku-4-5', max_tokens: 300, messages: [{ role: 'user', content: 'Tell me a story' }] },
      messages.headers(session.token, requestId),
    );
    expect(answer.status).toBe(200);
    const row = await bookedOnce(requestId);
    expect(row.estimated).toBe(true);
    expect(row.input_tokens).toBeGreaterThanOrEqual(utf8Bytes('Tell me a story'));
    expect(row.output_tokens).toBe(streamedBytes);
  });

  it('on embeddings: the input at its byte bound (UTF-8 bytes plus markers per input)', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => embeddingsAnswer(2, null));
    const requestId = newRequestId();
    const input = ['hello there', 'général'];
    const answer = await send(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      embeddings,
      { model: 'openai:text-embedding-3-small', input },
      embeddings.headers(session.token, requestId),
    );
    expect(answer.json()).toMatchObject({ faucet: { estimated: true } });
    const bound = input.reduce((total, text) => total + utf8Bytes(text) + 2, 0);
    expect(await bookedOnce(requestId)).toMatchObject({ estimated: true, input_tokens: bound, output_tokens: 0 });
    await expectAuditAgainst(upstream, { input: bound, output: 0 });
  });
});

/**
 * A provider that reports fewer tokens than it plainly produced. What Faucet bills today is the
 * provider's report, not its own count: the report is also what the provider bills the platform, so
 * the upstream audit holds. Faucet's own count of the output (UTF-8 bytes) is an upper bound of its
 * tokens, never a lower one, so it gives no floor to bill at instead.
 */
describe('a provider that reports fewer tokens than it streamed ("lies low"): booked as reported', () => {
  const words = Array.from({ length: 40 }, (_, index) => ` word${index}`);
  const lowReport = { input: 3, output: 1 };

  it('on Responses: 40 chunks streamed, 1 output token reported, 1 booked', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => sseResponse(openAiStream(words, lowReport)));
    const requestId = newRequestId();
    const answer = await send(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      responses,
      { model: 'openai:gpt-4o-mini', input: 'Count to forty', max_output_tokens: 300, stream: true },
      responses.headers(session.token, requestId),
    );
    const completed = events(answer.text).at(-1)?.data as { response: Body };
    expect(completed.response).toMatchObject({ usage: { input_tokens: 3, output_tokens: 1 } });
    expect(await bookedOnce(requestId)).toMatchObject({ estimated: false, input_tokens: 3, output_tokens: 1 });
    await expectAuditAgainst(upstream, lowReport);
  });

  it('on Messages to an Anthropic model: 40 deltas streamed, 1 output token reported, 1 booked', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => sseResponse(anthropicStream(words, lowReport)));
    const requestId = newRequestId();
    await send(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      messages,
      { model: 'anthropic:claude-haiku-4-5', max_tokens: 300, messages: [{ role: 'user', content: 'Count to forty' }], stream: true },
      messages.headers(session.token, requestId),
    );
    expect(await bookedOnce(requestId)).toMatchObject({ estimated: false, input_tokens: 3, output_tokens: 1 });
    await expectAuditAgainst(upstream, lowReport);
  });

  it('on embeddings: a long batch reported as 1 token, 1 booked', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream(() => embeddingsAnswer(2, 1));
    const requestId = newRequestId();
    await send(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      embeddings,
      { model: 'openai:text-embedding-3-small', input: ['word '.repeat(100), 'word '.repeat(100)] },
      embeddings.headers(session.token, requestId),
    );
    expect(await bookedOnce(requestId)).toMatchObject({ estimated: false, input_tokens: 1, output_tokens: 0 });
    await expectAuditAgainst(upstream, { input: 1, output: 0 });
  });
});

describe('a smuggled field that changes the price: refused 400 in the surface’s envelope, before anything is sent or held', () => {
  // One attacker tries every field on one wallet: each refusal must leave it whole.
  let attacker: Session;
  beforeAll(async () => {
    attacker = await fundedSession(testEnv);
  });

  const responsesSmuggled: Array<[string, Body]> = [
    ['a built-in web search tool', { tools: [{ type: 'web_search' }] }],
    ['a file search tool', { tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] }],
    ['service_tier "flex"', { service_tier: 'flex' }],
    ['service_tier "priority"', { service_tier: 'priority' }],
    ['background: true', { background: true }],
    ['prompt_cache_retention', { prompt_cache_retention: '24h' }],
    ['a stored prompt template', { prompt: { id: 'pmpt_1' } }],
    ['an input_file part', { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] }],
  ];
  it.each(responsesSmuggled)('on Responses: %s', async (_case, extra) => {
    await expectRefused(responses, { ...smallAsk.Responses, ...extra });
  });

  const messagesSmuggled: Array<[string, Body]> = [
    ['top_k', { top_k: 5 }],
    ['service_tier "priority"', { service_tier: 'priority' }],
    ['speed (fast mode)', { speed: 'fast' }],
    ['inference_geo', { inference_geo: 'us' }],
    ['a server web search tool', { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }] }],
    [
      'a PDF document',
      {
        messages: [
          { role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }] },
        ],
      },
    ],
    ['mcp_servers', { mcp_servers: [{ type: 'url', url: 'https://mcp.example.com', name: 'x' }] }],
  ];
  it.each(messagesSmuggled)('on Messages: %s', async (_case, extra) => {
    await expectRefused(messages, { ...smallAsk.Messages, ...extra });
  });

  it.each([
    ['anthropic-beta: context-1m (long-context price)', 'context-1m-2025-08-07'],
    ['anthropic-beta: fast-mode', 'fast-mode-2026-02-01'],
    ['anthropic-beta: a server tool beta', 'web-search-2025-03-05'],
    ['an unknown anthropic-beta', 'claude-code-20250219,some-new-beta-2027-01-01'],
  ])('on Messages: %s', async (_case, beta) => {
    await expectRefused(messages, smallAsk.Messages, { 'anthropic-beta': beta });
  });

  const embeddingsSmuggled: Array<[string, Body]> = [
    ['a chat model', { model: 'openai:gpt-4o-mini' }],
    ['dimensions on a model that cannot shorten its vectors', { model: 'openai:text-embedding-ada-002', dimensions: 256 }],
    ['dimensions above the model’s length', { dimensions: 4096 }],
    ['a field OpenAI does not define', { service_tier: 'flex' }],
    // Under the body limit, over what one request may hold (1,200,000 tokens at its byte bound).
    ['an input above what one request may hold', { input: 'x'.repeat(1_300_000) }],
  ];
  it.each(embeddingsSmuggled)('on embeddings: %s', async (_case, extra) => {
    await expectRefused(embeddings, { ...smallAsk.embeddings, ...extra });
  });

  async function expectRefused(surface: Surface, body: Body, headers: Record<string, string> = {}) {
    const upstream = forbiddenUpstream();
    const requestId = newRequestId();
    const answer = await send(gatewayWith({ upstreamFetch: upstream.fetch }), surface, body, {
      ...surface.headers(attacker.token, requestId),
      ...headers,
    });
    expect(answer.status).toBe(400);
    expect(surface.errorOf(answer.json())).toMatchObject({ code: 'invalid_request', request_id: requestId });
    await expectNothingSentHeldOrBooked(upstream, attacker, requestId);
  }
});

describe('a body over the gateway’s limit (2 MiB)', () => {
  const huge = 'x'.repeat(2 * 1024 * 1024 + 1024);
  const hugeAsk: Record<SurfaceName, Body> = {
    Responses: { ...smallAsk.Responses, input: huge },
    Messages: { ...smallAsk.Messages, messages: [{ role: 'user', content: huge }] },
    embeddings: { ...smallAsk.embeddings, input: huge },
  };

  it.each([responses, messages, embeddings])('on $name: 413 payload_too_large, nothing sent, held or booked', async (surface) => {
    const session = await fundedSession(testEnv);
    const upstream = forbiddenUpstream();
    const requestId = newRequestId();
    const answer = await send(
      gatewayWith({ upstreamFetch: upstream.fetch }),
      surface,
      hugeAsk[surface.name],
      surface.headers(session.token, requestId),
    );
    expect(answer.status).toBe(413);
    expect(answer.json().error).toMatchObject({ code: 'payload_too_large' });
    await expectNothingSentHeldOrBooked(upstream, session, requestId);
  });

  it.each([responses, embeddings])('on $name: in the DESIGN §4 envelope, carrying the request id', async (surface) => {
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const answer = await send(gatewayWith(), surface, hugeAsk[surface.name], surface.headers(session.token, requestId));
    expect(answer.json()).toEqual({ error: { code: 'payload_too_large', message: expect.any(String), request_id: requestId } });
  });

  // A refusal made before the Messages route runs (the body limit, the rate limiter) is in Anthropic's
  // envelope too (found by this test: it came in DESIGN §4's; shared/app.ts `errorEnvelopes`).
  it('on Messages: in Anthropic’s envelope (request_too_large), carrying the request id', async () => {
    const session = await fundedSession(testEnv);
    const requestId = newRequestId();
    const answer = await send(gatewayWith(), messages, hugeAsk.Messages, messages.headers(session.token, requestId));
    expect(answer.json()).toMatchObject({
      type: 'error',
      error: { type: 'request_too_large', code: 'payload_too_large', request_id: requestId },
      request_id: requestId,
    });
  });
});

describe('a replayed x-request-id: the second call refused 409 while the first is billed, nothing booked twice', () => {
  const answering = (surface: Surface) =>
    fakeUpstream(() => (surface === embeddings ? embeddingsAnswer(1, 4) : jsonResponse(openAiCompletion('once'))));
  const reported = (surface: Surface): Tokens => (surface === embeddings ? { input: 4, output: 0 } : { input: 11, output: 7 });

  it.each([responses, messages, embeddings])('on $name, after the first call is answered', async (surface) => {
    const session = await fundedSession(testEnv);
    const upstream = answering(surface);
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const requestId = newRequestId();
    expect((await send(app, surface, smallAsk[surface.name], surface.headers(session.token, requestId))).status).toBe(200);
    await settled(testEnv);
    const afterFirst = await wallet(testEnv, session.walletId);

    const replay = await send(app, surface, smallAsk[surface.name], surface.headers(session.token, requestId));
    expect(replay.status).toBe(409);
    expect(surface.errorOf(replay.json())).toMatchObject({ code: 'conflict', request_id: requestId });
    expect(upstream.requests).toHaveLength(1);
    expect(await bookedOnce(requestId)).toMatchObject(
      surface === embeddings ? { input_tokens: 4 } : { input_tokens: 11, output_tokens: 7 },
    );
    // The balance, not what is held: the lease the wallet object holds may be given back meanwhile.
    expect((await wallet(testEnv, session.walletId)).balance).toBe(afterFirst.balance);
    await expectAuditAgainst(upstream, reported(surface));
  });

  it('on Responses, while the first is still streaming: refused before the upstream; the first booked once when it ends', async () => {
    const session = await fundedSession(testEnv);
    const answer = openAiStream(['Hel', 'lo'], { input: 11, output: 7 });
    const upstream = generatingUpstream(answer.slice(0, 2), answer.slice(2));
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const requestId = newRequestId();
    const body = { ...smallAsk.Responses, stream: true };
    const first = await open(app, responses, body, responses.headers(session.token, requestId));

    const replay = await send(app, responses, body, responses.headers(session.token, requestId));
    expect(replay.status).toBe(409);
    expect(upstream.requests).toHaveLength(1);

    upstream.finish();
    expect(events(await first.response.text()).at(-1)?.event).toBe('response.completed');
    await first.finished();
    expect(await bookedOnce(requestId)).toMatchObject({ input_tokens: 11, output_tokens: 7 });
    expect((await wallet(testEnv, session.walletId)).held).toBe('0.00000000');
    await expectAuditAgainst(upstream, { input: 11, output: 7 });
  });

  it('across surfaces: an id spent on Responses is refused on Messages and on embeddings', async () => {
    const session = await fundedSession(testEnv);
    const upstream = fakeUpstream((recorded) =>
      recorded.url.endsWith('/embeddings') ? embeddingsAnswer(1, 4) : jsonResponse(openAiCompletion('once')),
    );
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const requestId = newRequestId();
    expect((await send(app, responses, smallAsk.Responses, responses.headers(session.token, requestId))).status).toBe(200);
    for (const surface of [messages, embeddings]) {
      const replay = await send(app, surface, smallAsk[surface.name], surface.headers(session.token, requestId));
      expect(replay.status).toBe(409);
      expect(surface.errorOf(replay.json())).toMatchObject({ code: 'conflict' });
    }
    expect(upstream.requests).toHaveLength(1);
    expect(await bookedOnce(requestId)).toMatchObject({ input_tokens: 11, output_tokens: 7 });
    await expectAuditAgainst(upstream, { input: 11, output: 7 });
  });
});

describe('a tool loop: each turn is one upstream call, booked once with its own tokens', () => {
  const firstTurn = { input: 30, output: 12 };
  const secondTurn = { input: 55, output: 6 };
  /** The provider calls the tool first, then answers from its result. */
  const toolThenAnswer = () =>
    fakeUpstream((recorded) => {
      // Chat (Messages), or the Responses API natively (Responses to OpenAI).
      const sent = recorded.body as { messages?: Array<{ role: string }>; input?: Array<{ type?: string }> };
      return sent.messages?.at(-1)?.role === 'tool' || sent.input?.at(-1)?.type === 'function_call_output'
        ? jsonResponse(openAiCompletion('It says hello.', usageOf(secondTurn)))
        : jsonResponse(toolCallCompletion('call_1', 'read_file', { path: 'a.txt' }, firstTurn));
    });
  const turnOf = (upstream: FakeUpstream) => (recorded: RecordedRequest) => (recorded === upstream.requests[0] ? firstTurn : secondTurn);

  it('on Responses: function_call, then function_call_output', async () => {
    const session = await fundedSession(testEnv);
    const upstream = toolThenAnswer();
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const tools = [{ type: 'function', name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } }];
    const ask = { role: 'user', content: 'Read a.txt' };

    const first = newRequestId();
    const called = await send(
      app,
      responses,
      { model: 'openai:gpt-4o-mini', input: [ask], tools, max_output_tokens: 100 },
      responses.headers(session.token, first),
    );
    const call = (called.json().output as Body[]).find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ call_id: 'call_1', name: 'read_file', arguments: '{"path":"a.txt"}' });

    const second = newRequestId();
    const answered = await send(
      app,
      responses,
      {
        model: 'openai:gpt-4o-mini',
        input: [
          ask,
          { type: 'function_call', call_id: 'call_1', name: 'read_file', arguments: '{"path":"a.txt"}' },
          { type: 'function_call_output', call_id: 'call_1', output: 'hello' },
        ],
        tools,
        max_output_tokens: 100,
      },
      responses.headers(session.token, second),
    );
    expect(answered.json()).toMatchObject({ output: [{ type: 'message', content: [{ type: 'output_text', text: 'It says hello.' }] }] });
    // To OpenAI natively: the call and its output go upstream as the client wrote them.
    expect(upstream.requests[1]?.url).toBe('https://api.openai.com/v1/responses');
    expect((upstream.requests[1]?.body as { input?: unknown } | undefined)?.input).toEqual([
      ask,
      { type: 'function_call', call_id: 'call_1', name: 'read_file', arguments: '{"path":"a.txt"}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'hello' },
    ]);

    expect(await bookedOnce(first)).toMatchObject({ input_tokens: 30, output_tokens: 12, estimated: false });
    expect(await bookedOnce(second)).toMatchObject({ input_tokens: 55, output_tokens: 6, estimated: false });
    await expectAuditAgainst(upstream, turnOf(upstream));
  });

  it('on Messages: tool_use, then tool_result', async () => {
    const session = await fundedSession(testEnv);
    const upstream = toolThenAnswer();
    const app = gatewayWith({ upstreamFetch: upstream.fetch });
    const tools = [{ name: 'read_file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }];
    const ask = { role: 'user', content: 'Read a.txt' };

    const first = newRequestId();
    const called = await send(
      app,
      messages,
      { model: 'openai:gpt-4o-mini', max_tokens: 100, tools, messages: [ask] },
      messages.headers(session.token, first),
    );
    expect(called.json()).toMatchObject({
      stop_reason: 'tool_use',
      content: [{ type: 'tool_use', id: 'call_1', name: 'read_file', input: { path: 'a.txt' } }],
    });

    const second = newRequestId();
    const answered = await send(
      app,
      messages,
      {
        model: 'openai:gpt-4o-mini',
        max_tokens: 100,
        tools,
        messages: [
          ask,
          { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'read_file', input: { path: 'a.txt' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'hello' }] },
        ],
      },
      messages.headers(session.token, second),
    );
    expect(answered.json()).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'It says hello.' }] });
    expect(sentMessages(upstream, 1).at(-1)).toMatchObject({
      role: 'tool',
      tool_call_id: 'call_1',
    });

    expect(await bookedOnce(first)).toMatchObject({ input_tokens: 30, output_tokens: 12, estimated: false });
    expect(await bookedOnce(second)).toMatchObject({ input_tokens: 55, output_tokens: 6, estimated: false });
    await expectAuditAgainst(upstream, turnOf(upstream));
  });
});

describe('concurrent calls on one small wallet: the charges never exceed the balance, no wallet below zero', () => {
  const words = 'word '.repeat(200).trim();
  const reported = { input: 200, output: 40 };
  /** The provider takes a while, so the calls' holds overlap. */
  const slow = (answer: () => Response) =>
    fakeUpstream(async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return answer();
    });

  // Each call holds its worst case (~1,000 prompt bytes, 40 output tokens) and costs far less; the
  // wallet covers two or three worst cases at once, so twelve at once must meet refusals.
  it.each([
    {
      surface: responses,
      funded: '0.00050000',
      body: { model: 'openai:gpt-4o-mini', input: words, max_output_tokens: 40 },
      upstream: () => slow(() => jsonResponse(openAiCompletion('x', usageOf(reported)))),
      reported,
    },
    {
      surface: messages,
      funded: '0.00050000',
      body: { model: 'openai:gpt-4o-mini', max_tokens: 40, messages: [{ role: 'user', content: words }], stream: true },
      upstream: () => slow(() => sseResponse(openAiStream(['x'], reported))),
      reported,
    },
    {
      surface: embeddings,
      funded: '0.00005000',
      body: { model: 'openai:text-embedding-3-small', input: words },
      upstream: () => slow(() => embeddingsAnswer(1, 200)),
      reported: { input: 200, output: 0 },
    },
  ])(
    'on $surface.name: twelve at once, the excess refused 402 before the upstream',
    async ({ surface, funded, body, upstream: makeUpstream, reported: tokens }) => {
      const session = await fundedSession(testEnv, funded);
      const upstream = makeUpstream();
      const app = gatewayWith({ upstreamFetch: upstream.fetch });
      const answers = await Promise.all(
        Array.from({ length: 12 }, () => send(app, surface, body, surface.headers(session.token, newRequestId()))),
      );

      const statuses = answers.map((answer) => answer.status);
      expect(statuses.every((status) => status === 200 || status === 402)).toBe(true);
      expect(statuses).toContain(402);
      const served = statuses.filter((status) => status === 200).length;
      expect(served).toBeGreaterThan(0);
      for (const refused of answers.filter((answer) => answer.status === 402)) {
        expect(surface.errorOf(refused.json())).toMatchObject({ code: 'insufficient_balance' });
      }
      // Refused by the hold, before any upstream cost was incurred.
      expect(upstream.requests).toHaveLength(served);

      await settled(testEnv);
      const after = await wallet(testEnv, session.walletId);
      expect(after.held).toBe('0.00000000');
      expect(after.balance.startsWith('-')).toBe(false);
      const [booked] = await sql<{ calls: number; charged: string; receivable: string }>(
        testEnv,
        `select count(*)::int as calls, sum(retail_usd)::numeric(20, 8)::text as charged,
                sum(receivable_usd)::numeric(20, 8)::text as receivable
           from usage_events where end_user_id = $1`,
        [session.endUserId],
      );
      // Every served call booked, none beyond what the wallet covered: the balance is what was funded less the charges.
      expect(booked).toMatchObject({ calls: served, receivable: '0.00000000' });
      const charged = parseDatabaseAmount(booked!.charged);
      expect(compareUsd(charged, parseWireAmount(funded))).toBeLessThanOrEqual(0);
      expect(after.balance).toBe(formatUsd(subtractUsd(parseWireAmount(funded), charged)));
      await expectAuditAgainst(upstream, tokens);
    },
  );
});
