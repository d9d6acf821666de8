/**
 * Holds that grow with the answer (docs/quota.md), as an attacker scripts them: a small wallet asks
 * a costly model for 32,000 tokens; many streams share one small wallet; a provider bursts, keeps
 * generating after the abort, reports no usage; the client leaves; the object restarts between steps.
 * Each ends on the upstream audit (every upstream call billed once, with at least the tokens the fake
 * provider generated) and reconciliation, and no wallet is ever below zero.
 */
import { runInDurableObject } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TestEnv } from '../../../test/harness.ts';
import type { RecordedRequest } from '../../../test/fake-upstream.ts';
import {
  chat,
  fundedSession,
  gatewayTestEnv,
  gatewayWith,
  newRequestId,
  openStream,
  settled,
  usageRows,
  wallet,
} from '../../../test/gateway-kit.ts';
import { costly, generatingProvider, stream } from '../../../test/quota-kit.ts';
import { expectBooksAgree, keptCall, sweepCallNow, unitsOf, walletObjectOf } from '../../../test/wallet-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

describe('a small wallet and a big max_tokens', () => {
  it('is served, cut with finish_reason "length" when the money ends, and billed within the wallet', async () => {
    const provider = generatingProvider();
    const app = gatewayWith({ upstreamFetch: provider.upstream.fetch });
    const session = await fundedSession(testEnv, '0.05000000');

    // Its worst case (32,000 tokens, more than 0.32 USD) is not what is held: the answer streams.
    const answer = await stream(testEnv, app, session.token, costly);
    expect(answer.status).toBe(200);
    expect(answer.finishReasons).toEqual(['length']);
    expect(answer.faucet).toMatchObject({ cut_reason: 'insufficient_balance', estimated: true });
    expect(answer.done).toBe(true);
    expect(answer.contentBytes).toBeGreaterThan(2_000);

    // The upstream was stopped at once, long before its max tokens.
    const [request] = provider.upstream.requests as [RecordedRequest];
    expect(provider.generations.get(request)).toMatchObject({ aborted: true });
    expect(provider.generations.get(request)?.output).toBeLessThan(4_000);
    expect((request.body as { max_tokens: number }).max_tokens).toBe(32_000);

    await settled(testEnv);
    const after = await wallet(testEnv, session.walletId);
    expect(unitsOf(after.balance)).toBeGreaterThanOrEqual(0n);
    expect(after.held).toBe('0.00000000');
    const [row] = await usageRows(testEnv, answer.requestId);
    expect(row).toMatchObject({ estimated: true });
    expect(unitsOf(row?.retail_usd ?? '0')).toBeLessThanOrEqual(unitsOf('0.05000000'));
    expect(answer.faucet?.charge.amount_usd).toBe(row?.retail_usd);
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  });

  it('the same call not streamed: read from the provider as a stream, answered whole, cut the same way and billed within the wallet', async () => {
    const provider = generatingProvider();
    const app = gatewayWith({ upstreamFetch: provider.upstream.fetch });
    const session = await fundedSession(testEnv, '0.05000000');
    const requestId = newRequestId();
    const response = await chat(app, testEnv, session.token, costly, requestId);
    expect(response.status).toBe(200);
    const answer = (await response.json()) as {
      object: string;
      choices: Array<{ message: { content: string }; finish_reason: string }>;
      usage?: unknown;
      faucet: Record<string, any>;
    };
    expect(answer.object).toBe('chat.completion');
    expect(answer.choices).toHaveLength(1);
    expect(answer.choices[0]?.finish_reason).toBe('length');
    expect(answer.choices[0]?.message.content.length).toBeGreaterThan(2_000);
    expect(answer.faucet).toMatchObject({ cut_reason: 'insufficient_balance', estimated: true });

    // Sent as a stream, stopped long before its max tokens.
    const [request] = provider.upstream.requests as [RecordedRequest];
    expect(request.body).toMatchObject({ stream: true, max_tokens: 32_000 });
    expect(provider.generations.get(request)).toMatchObject({ aborted: true });
    expect(provider.generations.get(request)?.output).toBeLessThan(4_000);
    // Billed at least what the provider generated: every byte it sent passed through the answer.
    expect(answer.faucet.output_tokens).toBeGreaterThanOrEqual(provider.generations.get(request)?.output ?? Infinity);

    await settled(testEnv);
    const after = await wallet(testEnv, session.walletId);
    expect(unitsOf(after.balance)).toBeGreaterThanOrEqual(0n);
    expect(after.held).toBe('0.00000000');
    const [row] = await usageRows(testEnv, requestId);
    expect(answer.faucet.charge.amount_usd).toBe(row?.retail_usd);
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  });

  it('not streamed, an answer that fits is answered whole with the usage the provider reported, and billed exactly that', async () => {
    const provider = generatingProvider();
    const app = gatewayWith({ upstreamFetch: provider.upstream.fetch });
    const session = await fundedSession(testEnv, '1.00000000');
    const response = await chat(app, testEnv, session.token, { ...costly, max_tokens: 3_000 });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { choices: Array<{ finish_reason: string }>; usage: unknown; faucet: Record<string, any> };
    expect(answer.choices[0]?.finish_reason).toBe('length');
    expect(answer.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 3_000 });
    expect(answer.faucet).toMatchObject({ estimated: false, output_tokens: 3_000 });
    expect(answer.faucet.cut_reason).toBeUndefined();
    await settled(testEnv);
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  });

  it('not streamed, a model that reasons out of sight keeps its worst-case hold: refused for the balance, nothing sent', async () => {
    const provider = generatingProvider();
    const app = gatewayWith({ upstreamFetch: provider.upstream.fetch });
    const session = await fundedSession(testEnv, '0.05000000');
    const response = await chat(app, testEnv, session.token, { ...costly, model: 'openai:o3' });
    expect(response.status).toBe(402);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('insufficient_balance');
    expect(provider.upstream.requests).toHaveLength(0);
  });

  it('an answer that fits its money grows in steps with no database round trip, and is billed exactly what the provider reports', async () => {
    const provider = generatingProvider();
    const app = gatewayWith({ upstreamFetch: provider.upstream.fetch });
    const session = await fundedSession(testEnv, '1.00000000');
    // A first call takes the lease; its settlement is flushed, so nothing is left for an alarm to book.
    const object = walletObjectOf(session.token);
    expect((await stream(testEnv, app, session.token, { ...costly, max_tokens: 10 })).status).toBe(200);
    await object.flush();
    const before = (await object.snapshot()).statements;

    // 8,000 tokens of 4 bytes: the first grant of 2,048 grows step by step to the whole bound.
    const answer = await stream(testEnv, app, session.token, { ...costly, max_tokens: 8_000 });
    expect(answer.status).toBe(200);
    expect(answer.finishReasons).toEqual(['length']);
    expect(answer.faucet?.cut_reason).toBeUndefined();
    expect(answer.faucet).toMatchObject({ estimated: false, output_tokens: 8_000, input_tokens: 12 });
    // The lease covered every step: not one Postgres statement while the answer streamed.
    expect((await object.snapshot()).statements).toBe(before);
    await settled(testEnv);
    expect(await wallet(testEnv, session.walletId)).toMatchObject({ held: '0.00000000' });
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  });
});

describe('a provider that misbehaves', () => {
  it('keeps generating after the abort and reports no usage: billed at the granted bound, which covers it', async () => {
    // Up to a step (1,024 tokens) generated between its last chunk and noticing the abort.
    const provider = generatingProvider({ afterAbort: 1_000, reportUsage: false });
    const app = gatewayWith({ upstreamFetch: provider.upstream.fetch });
    const session = await fundedSession(testEnv, '0.05000000');
    const answer = await stream(testEnv, app, session.token, costly);
    expect(answer.faucet).toMatchObject({ cut_reason: 'insufficient_balance', estimated: true });
    await settled(testEnv);
    expect(unitsOf((await wallet(testEnv, session.walletId)).balance)).toBeGreaterThanOrEqual(0n);
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  });

  it('sends a burst larger than a step: the next step is sized to cover it', async () => {
    const provider = generatingProvider({ burstAt: 3, burstTokens: 3_000 });
    const app = gatewayWith({ upstreamFetch: provider.upstream.fetch });
    const session = await fundedSession(testEnv, '1.00000000');
    const answer = await stream(testEnv, app, session.token, { ...costly, max_tokens: 8_000 });
    expect(answer.status).toBe(200);
    expect(answer.faucet?.cut_reason).toBeUndefined();
    expect(answer.faucet).toMatchObject({ estimated: false, output_tokens: 8_000 });
    await settled(testEnv);
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  });
});

describe('many streams on one small wallet', () => {
  it('20 at once: the charges never exceed the balance, each ends cleanly or is refused before the upstream', async () => {
    const provider = generatingProvider();
    const app = gatewayWith({ upstreamFetch: provider.upstream.fetch });
    const session = await fundedSession(testEnv, '0.10000000');
    const answers = await Promise.all(Array.from({ length: 20 }, () => stream(testEnv, app, session.token, costly)));
    const served = answers.filter((answer) => answer.status === 200);
    expect(served.length).toBeGreaterThanOrEqual(1);
    for (const answer of answers) {
      if (answer.status === 200) {
        expect(answer.done).toBe(true);
        expect(answer.faucet).toBeDefined();
      } else {
        expect(answer.status).toBe(402);
      }
    }
    expect(provider.upstream.requests).toHaveLength(served.length);
    await settled(testEnv);
    const after = await wallet(testEnv, session.walletId);
    expect(unitsOf(after.balance)).toBeGreaterThanOrEqual(0n);
    expect(after.held).toBe('0.00000000');
    const charged = served.reduce((sum, answer) => sum + unitsOf(answer.faucet?.charge.amount_usd ?? '0'), 0n);
    expect(charged).toBeLessThanOrEqual(unitsOf('0.10000000'));
    expect(unitsOf(after.balance)).toBe(unitsOf('0.10000000') - charged);
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  });
});

describe('a client that leaves mid-stream', () => {
  it('the drain that reads on for the usage stays within the quota: billed at least what was generated, never below zero', async () => {
    const provider = generatingProvider();
    const app = gatewayWith({ upstreamFetch: provider.upstream.fetch });
    const session = await fundedSession(testEnv, '0.05000000');
    const { response, requestId, finished } = await openStream(app, testEnv, session.token, costly);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let bytes = 0;
    while (bytes < 1_000) bytes += ((await reader.read()).value ?? new Uint8Array()).byteLength;
    await reader.cancel();
    await finished();
    await settled(testEnv);
    const [request] = provider.upstream.requests as [RecordedRequest];
    expect(provider.generations.get(request)?.output).toBeLessThan(32_000);
    const [row] = await usageRows(testEnv, requestId);
    expect(row?.estimated).toBe(true);
    expect(unitsOf((await wallet(testEnv, session.walletId)).balance)).toBeGreaterThanOrEqual(0n);
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  });
});

describe('the wallet object between steps', () => {
  it('keeps each granted step durably: restarted mid-answer, it reads the call back and the steps go on', async () => {
    const provider = generatingProvider();
    const app = gatewayWith({ upstreamFetch: provider.upstream.fetch });
    const session = await fundedSession(testEnv, '1.00000000');
    const { response, requestId, finished } = await openStream(app, testEnv, session.token, { ...costly, max_tokens: 20_000 });
    const callId = response.headers.get('x-faucet-call-id') as string;
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    // Read until a few steps were granted: the call's record and bound say the grant.
    let bytes = 0;
    while (bytes < 6_000) bytes += ((await reader.read()).value ?? new Uint8Array()).byteLength;
    const grown = await keptCall(session.token, callId);
    expect(grown.record.bound_output_tokens).toBeGreaterThan(2_048);
    expect(grown.rating.candidates).toEqual([
      expect.objectContaining({ model: 'gpt-4o', boundOutputTokens: grown.record.bound_output_tokens }),
    ]);

    // The object restarts mid-answer: it reads the call back as stored, and the steps go on.
    await runInDurableObject(walletObjectOf(session.token), (_instance, state) => state.abort('restart between steps')).catch(
      () => undefined,
    );
    while (!(await reader.read()).done) {
      // read the answer to its end
    }
    await finished();
    await settled(testEnv);
    const [row] = await usageRows(testEnv, requestId);
    expect(row).toMatchObject({ estimated: false, output_tokens: 20_000 });
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  });

  it('a call never settled is swept at its last grant, never more: a later step finds it booked and the answer ends', async () => {
    const provider = generatingProvider();
    const app = gatewayWith({ upstreamFetch: provider.upstream.fetch });
    const session = await fundedSession(testEnv, '1.00000000');
    const { response, requestId, finished } = await openStream(app, testEnv, session.token, costly);
    const callId = response.headers.get('x-faucet-call-id') as string;
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    // Read until a step was granted (a stream of about 150 SSE bytes per 40 bytes of text).
    let bytes = 0;
    while (bytes < 12_000) bytes += ((await reader.read()).value ?? new Uint8Array()).byteLength;
    const { record } = await keptCall(session.token, callId);
    expect(record.bound_output_tokens).toBeGreaterThan(2_048);
    expect(record.bound_output_tokens).toBeLessThan(32_000);

    // Its deadline passes as if the gateway's isolate had died: the object books it at its bound.
    await sweepCallNow(session.token, callId);
    const [swept] = await usageRows(testEnv, requestId);
    expect(swept).toMatchObject({ estimated: true, output_tokens: record.bound_output_tokens });

    // The stream's next step finds the call booked: the answer ends, nothing more is booked.
    while (!(await reader.read()).done) {
      // read the answer to its end
    }
    await finished();
    await settled(testEnv);
    expect(await usageRows(testEnv, requestId)).toEqual([swept]);
    await expectBooksAgree(testEnv, provider.upstream.requests, provider.usageOf);
  });
});
