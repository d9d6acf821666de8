/**
 * Holds that grow with the answer, as an end user meets them through the official clients: a new
 * user whose wallet holds 0.05 USD asks for 32,000 tokens of a model that does not reason. Its worst
 * case (more than 0.32 USD on gpt-4o, 0.16 USD on Claude Haiku 4.5) is not what is held when the
 * answer streams: the call is served, grown step by step as the output arrives, and cut when a step is
 * refused for the balance, ending as at max tokens in each surface's own words (chat completions
 * `finish_reason: "length"`, Responses `response.incomplete` for `max_output_tokens`, Messages
 * `stop_reason: "max_tokens"`), its `faucet` object saying why (`cut_reason: "insufficient_balance"`).
 * The same calls not streamed are read from the provider as a stream and answered whole, cut the same way.
 *
 * The stack's `openai` and `anthropic` pools are the fake upstream (tests/adversarial/fake-openai-upstream.ts),
 * told by `[fake:chunks=…]` to generate far beyond 32,000 tokens, so only the cut can end the answer
 * early. After each cut: the fake noticed the abort long before max tokens; the user's receipt and
 * the upstream audit book at least the tokens the fake generated, once; the wallet paid exactly its
 * receipt and is not below zero.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { beforeEach, describe, expect, inject, it, vi } from 'vitest';
import type { FaucetObject } from '../../workers/gateway/src/metering/faucet-object.ts';
import type { AnsweredCall } from '../adversarial/fake-upstream-kit.ts';
import { runUpstreamAudit } from '../load/upstream-audit-report.ts';
import { fundedSession, usageRecord } from './funded-session.ts';

const stack = inject('stack');
const funded = '0.05000000';
const maxTokens = 32_000;
/**
 * 100,000 pieces of `lorem ipsum ` (12 bytes, 3 tokens each), one every 2 ms: past any max tokens, so
 * the fake stops at 32,000 unless it is cut; paced so that a busy machine's lag between the gateway's
 * abort and the fake noticing it stays within the step the grant keeps ahead.
 */
const longStory = 'Write a very long story. [fake:chunks=100000] [fake:every=2]';

let token: string;

beforeEach(async () => {
  // A new end user per test: its receipts and its wallet are this test's alone.
  token = await fundedSession(stack, funded);
});

const openai = () => new OpenAI({ baseURL: `${stack.gatewayUrl}/v1`, apiKey: token, maxRetries: 0 });

/** A wire amount (`-?D.DDDDDDDD`) in 1e-8 USD units, negative ones too. */
const units = (amount: string | undefined): bigint => {
  expect(amount).toMatch(/^-?\d+\.\d{8}$/);
  return BigInt(amount!.replace('.', ''));
};

async function user<T>(path: string): Promise<T> {
  const response = await fetch(`${stack.apiUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** The fake upstream's record of the call it answered for this gateway call (its `x-client-request-id`). */
async function upstreamCall(callId: string): Promise<AnsweredCall> {
  const log = (await (await fetch(stack.fakeUpstreamCallsUrl)).json()) as { calls: AnsweredCall[] };
  const calls = log.calls.filter((call) => call.callId === callId);
  expect(calls).toHaveLength(1);
  return calls[0]!;
}

/**
 * A call cut for the balance: the fake upstream generated until it noticed the abort, long before
 * max tokens; the receipt books at least what it generated (estimated: no provider count came), as
 * the `faucet` object charged; the upstream audit finds it booked once and in full; the wallet paid
 * exactly the receipt and holds no less than zero.
 */
async function expectCutAndBilled(callId: string, faucet: FaucetObject | undefined, api: AnsweredCall['api']): Promise<void> {
  expect(faucet).toMatchObject({ cut_reason: 'insufficient_balance', route_mode: 'platform', estimated: true });
  // The fake sees the abort a little after the gateway: wait until it stopped generating.
  const upstream = await vi.waitFor(
    async () => {
      const call = await upstreamCall(callId);
      expect(call.ending).toBe('client_gone');
      return call;
    },
    { timeout: 10_000, interval: 100 },
  );
  expect(upstream).toMatchObject({ api, stream: true });
  // Stopped at once: 0.05 USD buys a few thousand tokens, nowhere near the 32,000 asked.
  expect(upstream.outputTokens).toBeGreaterThan(0);
  expect(upstream.outputTokens).toBeLessThan(maxTokens / 4);
  expect(faucet?.output_tokens).toBeGreaterThanOrEqual(upstream.outputTokens);
  expect(faucet?.input_tokens).toBeGreaterThanOrEqual(upstream.inputTokens);

  // The receipts flush the wallet object's bookings first; one still settling shows up on a later read.
  const receipt = await vi.waitFor(
    async () => {
      const found = await usageRecord(stack, token, faucet?.request_id ?? '');
      expect(found).toBeDefined();
      return found!;
    },
    { timeout: 10_000, interval: 200 },
  );
  expect(receipt).toMatchObject({
    route_mode: 'platform',
    provider: faucet?.provider,
    model: faucet?.model,
    estimated: true,
    input_tokens: faucet?.input_tokens,
    output_tokens: faucet?.output_tokens,
    charged_usd: faucet?.charge.amount_usd,
  });
  const charged = units(receipt.charged_usd as string);
  expect(charged).toBeGreaterThan(0n);
  expect(charged).toBeLessThanOrEqual(units(funded));

  const audit = await runUpstreamAudit(stack.databaseUrl, {
    settleGraceSeconds: 600,
    reported: [{ callId, inputTokens: upstream.inputTokens, outputTokens: upstream.outputTokens }],
  });
  expect(audit.upstream).toMatchObject({ ok: true, upstreamCalls: 1, unbilledCalls: 0, unbilledTokens: 0, doubleBilledCalls: 0 });

  const wallet = await user<{ balance_usd: string; held_usd: string; available_usd: string }>('/v1/user/wallet');
  expect(units(wallet.balance_usd)).toBe(units(funded) - charged);
  expect(units(wallet.balance_usd)).toBeGreaterThanOrEqual(0n);
  // What the wallet object still holds is its lease on the balance (docs/edge.md), never more than there is.
  expect(units(wallet.held_usd)).toBeLessThanOrEqual(units(wallet.balance_usd));
  expect(units(wallet.available_usd)).toBeGreaterThanOrEqual(0n);
}

describe('0.05 USD and max_tokens 32,000 through the official openai package', () => {
  it('chat completions, streamed: served, cut with finish_reason "length", the faucet event naming the balance', async () => {
    const { data: stream, response } = await openai()
      .chat.completions.create({
        model: 'openai:gpt-4o',
        max_tokens: maxTokens,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: longStory }],
      })
      .withResponse();
    expect(response.status).toBe(200);
    const callId = response.headers.get('x-faucet-call-id') ?? '';
    expect(callId).not.toBe('');

    let text = '';
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    // Served well past the first hold's usable step, then cut.
    expect(text.length).toBeGreaterThan(2_000);
    expect(text).toMatch(/^(lorem ipsum )+/);
    const finishes = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason)).filter((reason) => reason != null);
    expect(finishes).toEqual(['length']);
    const lastChoice = chunks.findLast((chunk) => chunk.choices.length > 0);
    expect(lastChoice?.choices[0]?.finish_reason).toBe('length');
    // The SDK hands the faucet event over as a chunk like any other: the last one, no choices.
    const last = chunks.at(-1) as unknown as { object: string; choices: unknown[]; faucet?: FaucetObject };
    expect(last).toMatchObject({ object: 'faucet.usage', choices: [] });
    expect(last.faucet).toMatchObject({ provider: 'openai', model: 'gpt-4o' });

    await expectCutAndBilled(callId, last.faucet, 'chat.completions');
  });

  it('Responses, streamed: ends with response.incomplete for max_output_tokens, the faucet object naming the balance', async () => {
    const { data: stream, response } = await openai()
      .responses.create({ model: 'openai:gpt-4o', max_output_tokens: maxTokens, stream: true, input: longStory })
      .withResponse();
    expect(response.status).toBe(200);
    const callId = response.headers.get('x-faucet-call-id') ?? '';
    expect(callId).not.toBe('');

    let text = '';
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) {
      events.push(event);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    expect(text.length).toBeGreaterThan(2_000);
    expect(events.map((event) => event.type)).not.toContain('response.completed');
    const last = events.at(-1);
    expect(last?.type).toBe('response.incomplete');
    const final = (last as OpenAI.Responses.ResponseIncompleteEvent).response;
    expect(final).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    const faucet = (final as unknown as { faucet?: FaucetObject }).faucet;
    expect(faucet).toMatchObject({ provider: 'openai', model: 'gpt-4o' });

    await expectCutAndBilled(callId, faucet, 'responses');
  });

  it('chat completions not streamed: read upstream as a stream, answered whole with finish_reason "length" and the faucet object naming the balance', async () => {
    const { data: completion, response } = await openai()
      .chat.completions.create({
        model: 'openai:gpt-4o',
        max_tokens: maxTokens,
        messages: [{ role: 'user', content: longStory }],
      })
      .withResponse();
    expect(response.status).toBe(200);
    const callId = response.headers.get('x-faucet-call-id') ?? '';
    expect(callId).not.toBe('');
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0]?.finish_reason).toBe('length');
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(2_000);
    expect(completion.choices[0]?.message.content).toMatch(/^(lorem ipsum )+/);
    const faucet = (completion as unknown as { faucet?: FaucetObject }).faucet;
    expect(faucet).toMatchObject({ provider: 'openai', model: 'gpt-4o' });

    await expectCutAndBilled(callId, faucet, 'chat.completions');
  });

  it('Responses not streamed: status "incomplete" for max_output_tokens, the faucet object naming the balance', async () => {
    const { data: answer, response } = await openai()
      .responses.create({ model: 'openai:gpt-4o', max_output_tokens: maxTokens, input: longStory })
      .withResponse();
    expect(response.status).toBe(200);
    const callId = response.headers.get('x-faucet-call-id') ?? '';
    expect(answer).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect(answer.output_text.length).toBeGreaterThan(2_000);
    const faucet = (answer as unknown as { faucet?: FaucetObject }).faucet;
    expect(faucet).toMatchObject({ provider: 'openai', model: 'gpt-4o' });

    await expectCutAndBilled(callId, faucet, 'responses');
  });
});

describe('0.05 USD and max_tokens 32,000 through the official @anthropic-ai/sdk', () => {
  it('Messages, streamed on Claude without thinking: stop_reason "max_tokens", the faucet object in message_delta', async () => {
    const client = new Anthropic({ baseURL: stack.gatewayUrl, apiKey: token, maxRetries: 0 });
    const stream = client.messages.stream({
      model: 'anthropic:claude-haiku-4-5',
      max_tokens: maxTokens,
      messages: [{ role: 'user', content: longStory }],
    });
    const deltas: Anthropic.MessageDeltaEvent[] = [];
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_delta') deltas.push(event);
    });
    let text = '';
    stream.on('text', (delta) => {
      text += delta;
    });
    const message = await stream.finalMessage();

    expect(text.length).toBeGreaterThan(2_000);
    expect(deltas).toHaveLength(1);
    expect(deltas[0]?.delta.stop_reason).toBe('max_tokens');
    const faucet = (deltas[0] as unknown as { faucet?: FaucetObject }).faucet;
    expect(faucet).toMatchObject({ provider: 'anthropic', model: 'claude-haiku-4-5' });
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text })]);
    expect(message.usage.output_tokens).toBe(faucet?.output_tokens);

    // The message id names the gateway's call (`msg_<call id>`), sent upstream as `x-client-request-id`.
    await expectCutAndBilled(message.id.replace(/^msg_/, ''), faucet, 'messages');
  });

  it('Messages not streamed on Claude without thinking: the whole message with stop_reason "max_tokens" and its faucet object', async () => {
    const client = new Anthropic({ baseURL: stack.gatewayUrl, apiKey: token, maxRetries: 0 });
    // An explicit timeout: the SDK refuses a call not streamed whose max_tokens could take over ten minutes.
    const message = await client.messages.create(
      { model: 'anthropic:claude-haiku-4-5', max_tokens: maxTokens, messages: [{ role: 'user', content: longStory }] },
      { timeout: 120_000 },
    );
    expect(message.stop_reason).toBe('max_tokens');
    const [block] = message.content;
    expect(block?.type).toBe('text');
    expect(block?.type === 'text' ? block.text.length : 0).toBeGreaterThan(2_000);
    const faucet = (message as unknown as { faucet?: FaucetObject }).faucet;
    expect(faucet).toMatchObject({ provider: 'anthropic', model: 'claude-haiku-4-5' });
    expect(message.usage.output_tokens).toBe(faucet?.output_tokens);

    await expectCutAndBilled(message.id.replace(/^msg_/, ''), faucet, 'messages');
  });
});
