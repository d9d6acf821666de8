import { describe, expect, it } from 'vitest';
import { formatSseDone, formatSseJson } from '#shared/wire/format-sse.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import type { MeteredUsage } from '../metering/metered-usage.ts';
import type { ChatCompletionChunk } from '../openai/chat-schemas.ts';
import { bufferedAnswer, CompletionBuilder } from './buffered-answer.ts';
import { meteredStream } from './metered-stream.ts';
import { faucetFixture } from '../../../test/faucet-fixture.ts';

const faucet = faucetFixture({ provider: 'openai', model: 'gpt-4o-mini', input_tokens: 20, output_tokens: 9 });

type Choice = ChatCompletionChunk['choices'][number];

function chunk(choices: Choice[], extra: Partial<ChatCompletionChunk> = {}): ChatCompletionChunk {
  return { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices, ...extra };
}

function delta(value: Choice['delta'], finishReason: string | null = null, index = 0): Choice {
  return { index, delta: value, finish_reason: finishReason };
}

const usage = { prompt_tokens: 20, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 16 } };

async function* upstream(chunks: ChatCompletionChunk[], failAfter?: Error): AsyncGenerator<ChatCompletionChunk> {
  for (const each of chunks) yield each;
  if (failAfter) throw failAfter;
}

/** The metered stream as the buffered route builds it (usage forwarded), its settlement recorded. */
function metered(chunks: AsyncIterable<ChatCompletionChunk>) {
  const settled: MeteredUsage[] = [];
  const stream = meteredStream({
    chunks,
    includeUsage: true,
    bounds: { inputTokens: 1000, outputTokens: 1000 },
    requestId: 'req_1',
    deadlineMs: 60_000,
    drainMs: 1000,
    settle: async (usage) => {
      settled.push(usage);
      return faucet;
    },
    abandon: async () => undefined,
    stopUpstream: () => undefined,
    defer: () => undefined,
    onSettleFailure: () => undefined,
  });
  return { stream, settled };
}

function sse(...events: Array<Uint8Array>): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const event of events) controller.enqueue(event);
      controller.close();
    },
  });
}

describe('bufferedAnswer: the metered stream gathered into one completion', () => {
  it('answers the text, the finish reason, the usage and the faucet object the metered stream settled', async () => {
    const call = metered(
      upstream([
        chunk([delta({ role: 'assistant', content: '' })], { system_fingerprint: 'fp_1' }),
        chunk([delta({ content: 'Hello' })]),
        chunk([delta({ content: ', world' })]),
        chunk([delta({}, 'stop')]),
        chunk([], { usage }),
      ]),
    );
    const { completion, faucet: answered } = await bufferedAnswer(call.stream);
    expect(completion).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-4o-mini',
      system_fingerprint: 'fp_1',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello, world' }, finish_reason: 'stop' }],
      usage,
    });
    expect(answered).toEqual(faucet);
    expect(call.settled).toHaveLength(1);
    expect(call.settled[0]).toMatchObject({ tokens: { input: 4, cachedInput: 16, output: 9 }, estimated: false });
  });

  it('joins tool calls sent in pieces, in their index order, and several choices apart', async () => {
    const call = metered(
      upstream([
        chunk([
          delta({
            role: 'assistant',
            tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'time', arguments: '' } }],
          }),
        ]),
        chunk([delta({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city"' } }] })]),
        chunk([delta({ content: 'Second.' }, null, 1)]),
        chunk([delta({ tool_calls: [{ index: 0, function: { arguments: ':"Paris"}' } }] })]),
        chunk([delta({ tool_calls: [{ index: 1, function: { arguments: '{}' } }] })]),
        chunk([delta({}, 'tool_calls'), delta({}, 'stop', 1)]),
        chunk([], { usage }),
      ]),
    );
    const { completion } = await bufferedAnswer(call.stream);
    expect(completion.choices).toEqual([
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_b', type: 'function', function: { name: 'time', arguments: '{}' } },
          ],
        },
        finish_reason: 'tool_calls',
      },
      { index: 1, message: { role: 'assistant', content: 'Second.' }, finish_reason: 'stop' },
    ]);
  });

  it('keeps log probabilities, a refusal and reasoning text, and closes a thinking block on its signature', () => {
    const builder = new CompletionBuilder();
    const token = (text: string) => ({ token: text, logprob: -0.1, bytes: null, top_logprobs: [] });
    builder.push(chunk([{ ...delta({ reasoning_content: 'Think ' }), logprobs: { content: [token('a')] } }]));
    builder.push(chunk([{ ...delta({ reasoning_content: 'more.', refusal: 'No' }), logprobs: { content: [token('b')], refusal: null } }]));
    builder.push(chunk([delta({ thinking_blocks: [{ type: 'thinking', thinking: '', signature: 'sig' }] })]));
    builder.push(chunk([delta({ thinking_blocks: [{ type: 'redacted_thinking', data: 'opaque' }] }, 'stop')]));
    expect(builder.completion().choices[0]).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        refusal: 'No',
        reasoning_content: 'Think more.',
        thinking_blocks: [
          { type: 'thinking', thinking: 'Think more.', signature: 'sig' },
          { type: 'redacted_thinking', data: 'opaque' },
        ],
      },
      finish_reason: 'stop',
      logprobs: { content: [token('a'), token('b')], refusal: [] },
    });
  });

  it("passes a cut answer's finish reason and cut_reason on", async () => {
    const cut = { ...faucet, cut_reason: 'insufficient_balance' as const };
    const { completion, faucet: answered } = await bufferedAnswer(
      sse(
        formatSseJson(chunk([delta({ role: 'assistant', content: 'Partial' })])),
        formatSseJson(chunk([delta({}, 'length')])),
        formatSseJson({ id: 'req_1', object: 'faucet.usage', created: 1, model: 'openai:gpt-4o-mini', choices: [], faucet: cut }),
        formatSseDone(),
      ),
    );
    expect(completion.choices[0]).toMatchObject({ message: { content: 'Partial' }, finish_reason: 'length' });
    expect(answered.cut_reason).toBe('insufficient_balance');
  });

  it('throws the error an envelope names (an unknown code as upstream_error), after the metered stream booked what was delivered', async () => {
    const call = metered(
      upstream([chunk([delta({ role: 'assistant', content: 'Half an ans' })])], new FaucetError('upstream_error', 'The provider broke.')),
    );
    await expect(bufferedAnswer(call.stream)).rejects.toMatchObject({ code: 'upstream_error', message: 'The provider broke.' });
    expect(call.settled).toHaveLength(1);

    const timeout = sse(formatSseJson({ error: { code: 'upstream_timeout', message: 'Too long.', request_id: 'req_1' } }));
    await expect(bufferedAnswer(timeout)).rejects.toMatchObject({ code: 'upstream_timeout', message: 'Too long.' });
    const unknown = sse(formatSseJson({ error: { code: 'no_such_code', message: 'Odd.' } }));
    await expect(bufferedAnswer(unknown)).rejects.toMatchObject({ code: 'upstream_error' });
  });

  it('refuses a stream that ends without [DONE], or with [DONE] but no faucet object', async () => {
    const early = sse(formatSseJson(chunk([delta({ content: 'Hi' })])));
    await expect(bufferedAnswer(early)).rejects.toMatchObject({ code: 'upstream_error' });
    const unsettled = sse(formatSseJson(chunk([delta({ content: 'Hi' }, 'stop')])), formatSseDone());
    await expect(bufferedAnswer(unsettled)).rejects.toMatchObject({ code: 'upstream_error' });
    expect(() => new CompletionBuilder().completion()).toThrow(FaucetError);
  });
});
