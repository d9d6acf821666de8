/**
 * The official `@anthropic-ai/sdk`, unmodified, on a catalog-priced Claude model through the gateway,
 * as Claude Code uses it: the session token as its key, the gateway as its base URL, no Faucet field
 * (the app's default feature applies). The stack's `anthropic` platform pool is the fake upstream
 * (tests/adversarial/fake-anthropic-messages.ts), which signs its thinking and refuses, as Anthropic
 * does, a tool loop whose last assistant turn does not start with that signed thinking: a second
 * turn answered proves the signature survived the round trip through chat. Each call is booked as
 * the provider billed it: the answer's usage, its `faucet` object, the user's usage receipt and the
 * upstream audit over the fake's own log agree.
 */
import Anthropic from '@anthropic-ai/sdk';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import type { FaucetObject } from '../../workers/gateway/src/metering/faucet-object.ts';
import type { AnsweredCall, RefusedCall } from '../adversarial/fake-upstream-kit.ts';
import { runUpstreamAudit } from '../load/upstream-audit-report.ts';
import { fundedSession, usageRecord } from './funded-session.ts';

const stack = inject('stack');
const model = 'anthropic:claude-haiku-4-5';
const tools: Anthropic.Tool[] = [
  {
    name: 'get_weather',
    description: 'The weather in a city today.',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];
const thinking = { type: 'enabled', budget_tokens: 2048 } as const;
const question = 'What is the weather in Paris?';

let token: string;
let client: Anthropic;

beforeAll(async () => {
  token = await fundedSession(stack);
  client = new Anthropic({ baseURL: stack.gatewayUrl, apiKey: token, maxRetries: 0 });
});

/** The fake upstream's log of Messages calls: those it answered (billed) and those it refused. */
async function upstreamLog(): Promise<{ calls: AnsweredCall[]; refused: RefusedCall[] }> {
  const log = (await (await fetch(stack.fakeUpstreamCallsUrl)).json()) as { calls: AnsweredCall[]; refused: RefusedCall[] };
  return { calls: log.calls.filter((call) => call.api === 'messages'), refused: log.refused.filter((call) => call.api === 'messages') };
}

/** The gateway's call id, which names the message (`msg_<call id>`) and is sent upstream as `x-client-request-id`. */
const callIdOf = (message: Anthropic.Message) => message.id.replace(/^msg_/, '');

/**
 * What the provider billed for each message is what the answer says, what its `faucet` object charged,
 * what the user's receipt shows, and what the upstream audit finds booked.
 */
async function expectBilledAsUpstream(answers: Array<{ message: Anthropic.Message; faucet: FaucetObject | undefined }>): Promise<void> {
  const log = (await upstreamLog()).calls;
  const reported = [];
  for (const { message, faucet } of answers) {
    const upstream = log.find((call) => call.callId === callIdOf(message));
    expect(upstream).toMatchObject({ model: 'claude-haiku-4-5', ending: 'completed' });
    const { input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens } = message.usage;
    expect((input_tokens ?? 0) + (cache_creation_input_tokens ?? 0) + (cache_read_input_tokens ?? 0)).toBe(upstream?.inputTokens);
    expect(output_tokens).toBe(upstream?.outputTokens);
    expect(faucet).toMatchObject({
      feature: stack.featureKey,
      route_mode: 'platform',
      provider: 'anthropic',
      model: 'claude-haiku-4-5',
      input_tokens: upstream?.inputTokens,
      output_tokens: upstream?.outputTokens,
      estimated: false,
    });
    expect(Number(faucet?.charge.amount_usd)).toBeGreaterThan(0);
    expect(await usageRecord(stack, token, faucet?.request_id ?? '')).toMatchObject({
      provider: 'anthropic',
      model: 'claude-haiku-4-5',
      route_mode: 'platform',
      input_tokens: upstream?.inputTokens,
      output_tokens: upstream?.outputTokens,
      charged_usd: faucet?.charge.amount_usd,
    });
    reported.push({
      callId: upstream?.callId ?? 'missing',
      inputTokens: upstream?.inputTokens ?? 0,
      outputTokens: upstream?.outputTokens ?? 0,
    });
  }
  const audit = await runUpstreamAudit(stack.databaseUrl, { settleGraceSeconds: 600, reported });
  expect(audit.upstream).toMatchObject({
    ok: true,
    upstreamCalls: answers.length,
    unbilledCalls: 0,
    unbilledTokens: 0,
    doubleBilledCalls: 0,
  });
}

/** One streamed turn of the loop; the `faucet` object travels in the `message_delta` event. */
async function streamTurn(messages: Anthropic.MessageParam[]) {
  const stream = client.messages.stream({ model, max_tokens: 4096, thinking, tools, messages });
  let faucet: FaucetObject | undefined;
  let thought = '';
  const signatures: string[] = [];
  stream.on('streamEvent', (event) => {
    if (event.type === 'message_delta') faucet = (event as unknown as { faucet?: FaucetObject }).faucet;
  });
  stream.on('thinking', (delta) => {
    thought += delta;
  });
  stream.on('signature', (signature) => void signatures.push(signature));
  const message = await stream.finalMessage();
  return { message, faucet, thought, signatures };
}

describe('the official @anthropic-ai/sdk on a Claude model', () => {
  it('calls a model the gateway lists for the Messages API', async () => {
    const models = (await (await fetch(`${stack.gatewayUrl}/v1/models`)).json()) as { data: Array<{ id: string; surfaces: string[] }> };
    expect(models.data.find((entry) => entry.id === model)?.surfaces).toContain('messages');
  });

  it('streams a tool loop with thinking: the signed thinking and the tool call go back as the SDK kept them', async () => {
    const first = await streamTurn([{ role: 'user', content: question }]);
    expect(first.message.stop_reason).toBe('tool_use');
    expect(first.message.content.map((block) => block.type)).toEqual(['thinking', 'tool_use']);
    const [thinkingBlock, toolUse] = first.message.content as [Anthropic.ThinkingBlock, Anthropic.ToolUseBlock];
    expect(thinkingBlock.thinking).toBe(first.thought);
    expect(thinkingBlock.thinking).toContain(question);
    expect(thinkingBlock.signature).not.toBe('');
    expect(first.signatures).toEqual([thinkingBlock.signature]);
    expect(toolUse).toMatchObject({ name: 'get_weather', input: { city: 'Paris' } });

    // Claude Code's next request: the turn's own content (thinking with its signature, the tool call), then the result.
    const second = await streamTurn([
      { role: 'user', content: question },
      { role: 'assistant', content: first.message.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '18 degrees and sunny in Paris' }] },
    ]);
    expect(second.message.stop_reason).toBe('end_turn');
    expect(second.message.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(second.message.content[1]).toMatchObject({ type: 'text', text: 'Tool result: 18 degrees and sunny in Paris' });

    await expectBilledAsUpstream([first, second]);
  });

  it('refuses, in Anthropic’s words, a tool loop that drops the signed thinking (the upstream checks it)', async () => {
    const first = await streamTurn([{ role: 'user', content: question }]);
    const toolUse = first.message.content.find((block) => block.type === 'tool_use')!;
    const refusedBefore = (await upstreamLog()).refused.length;
    const failure = await client.messages
      .create({
        model,
        max_tokens: 4096,
        thinking,
        tools,
        messages: [
          { role: 'user', content: question },
          { role: 'assistant', content: [toolUse] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'sunny' }] },
        ],
      })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Anthropic.BadRequestError);
    expect((failure as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('Expected `thinking` or `redacted_thinking`') },
    });
    const refused = (await upstreamLog()).refused.slice(refusedBefore);
    expect(refused).toEqual([expect.objectContaining({ model: 'claude-haiku-4-5', status: 400 })]);
  });

  it('creates a message without streaming, the faucet object a top-level field; a cached system prompt is written once, then read', async () => {
    const system: Anthropic.TextBlockParam[] = [
      {
        type: 'text',
        text: `You answer questions about the weather (${crypto.randomUUID()}). `.repeat(20),
        cache_control: { type: 'ephemeral' },
      },
    ];
    const create = async (content: string) => {
      const message = await client.messages.create({ model, max_tokens: 256, system, messages: [{ role: 'user', content }] });
      return { message, faucet: (message as unknown as { faucet?: FaucetObject }).faucet };
    };

    const written = await create('Is it sunny?');
    expect(written.message.content).toEqual([{ type: 'text', text: 'lorem ipsum lorem ipsum lorem ipsum ' }]);
    expect(written.message.stop_reason).toBe('end_turn');
    expect(written.message.usage.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(written.message.usage.cache_read_input_tokens).toBe(0);

    const read = await create('Is it raining?');
    expect(read.message.usage.cache_creation_input_tokens).toBe(0);
    expect(read.message.usage.cache_read_input_tokens).toBe(written.message.usage.cache_creation_input_tokens);
    // The same prompt size, but the prefix billed at the read price instead of the write price.
    expect(Number(read.faucet?.charge.amount_usd)).toBeLessThan(Number(written.faucet?.charge.amount_usd));

    await expectBilledAsUpstream([written, read]);
  });

  it('counts tokens without calling the provider', async () => {
    const before = (await upstreamLog()).calls.length;
    const count = await client.messages.countTokens({ model, tools, messages: [{ role: 'user', content: question }] });
    expect(count.input_tokens).toBeGreaterThan(0);
    expect((await upstreamLog()).calls.length).toBe(before);
  });
});
