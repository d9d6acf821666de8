/**
 * Anthropic prompt caching through the chat pipeline: the breakpoints a Messages client sets
 * (`cache_control` on system blocks, text, images, tool results, tools) reach an Anthropic model
 * where the client put them, with their lifetime (`ttl`); other protocols never see them; and a
 * prompt that may be written to the cache is held at the cache-write price of its longest
 * lifetime, so a booking can never exceed its hold.
 */
import { describe, expect, it } from 'vitest';
import type { Env } from '#shared/env.ts';
import { compareUsd, formatUsd } from '#shared/money/index.ts';
import { currentPriceCatalog, rateUsage, ratingSettingsFor } from '#shared/rating/index.ts';
import type { ChatRequest } from '../../openai/chat-schemas.ts';
import { grantHold, holdBounds } from '../../metering/hold-bounds.ts';
import { parseModel } from '../../routing/parse-model.ts';
import { chatRequestOfMessages } from '../../surfaces/messages/chat-request-of-messages.ts';
import { messagesRequestSchema } from '../../surfaces/messages/messages-request.ts';
import { longestCacheLifetime, requestForProtocol } from '../accepted-fields.ts';
import { toAnthropicRequest } from './to-anthropic-request.ts';

const ephemeral = { type: 'ephemeral' };

/** Where Claude Code sets its breakpoints: the system prompt, the tools, the newest turn. */
const cached = messagesRequestSchema.parse({
  model: 'anthropic:claude-haiku-4-5',
  max_tokens: 1000,
  system: [
    { type: 'text', text: 'You are Claude Code.' },
    { type: 'text', text: 'Project rules.', cache_control: { type: 'ephemeral', ttl: '1h' } },
  ],
  tools: [{ name: 'Read', input_schema: { type: 'object' }, cache_control: ephemeral }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'Read a.txt' }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Read', input: {} }] },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello', cache_control: ephemeral },
        { type: 'text', text: 'Summarise it.', cache_control: ephemeral },
      ],
    },
  ],
});

function chatOf(body = cached): ChatRequest {
  const { feature: _feature, route_mode: _route, model: _model, ...request } = chatRequestOfMessages(body);
  return { ...request, model: 'claude-haiku-4-5' };
}

describe('cache breakpoints to an Anthropic model', () => {
  it('sit where the client put them, a one-hour breakpoint kept one hour', () => {
    const sent = toAnthropicRequest(requestForProtocol('anthropic', chatOf()), 1024);
    expect(sent.system).toEqual([
      { type: 'text', text: 'You are Claude Code.' },
      { type: 'text', text: 'Project rules.', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
    expect(sent.tools).toEqual([{ name: 'Read', input_schema: { type: 'object' }, cache_control: ephemeral }]);
    expect(sent.messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello', cache_control: ephemeral },
        { type: 'text', text: 'Summarise it.', cache_control: ephemeral },
      ],
    });
    expect(JSON.stringify(sent).match(/"ttl"/g)).toHaveLength(1);
  });

  it('keep an explicit five-minute ttl, and a tool answer the last breakpoint of its parts', () => {
    const request: ChatRequest = {
      model: 'claude-haiku-4-5',
      messages: [
        { role: 'user', content: 'Read it' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'Read', arguments: '{}' } }],
        },
        {
          role: 'tool',
          tool_call_id: 'toolu_1',
          content: [
            { type: 'text', text: 'a', cache_control: { type: 'ephemeral', ttl: '1h' } },
            { type: 'text', text: 'b', cache_control: { type: 'ephemeral', ttl: '5m' } },
          ],
        },
      ],
    };
    const sent = toAnthropicRequest(request, 1024);
    expect(sent.messages.at(-1)?.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_1', content: 'ab', cache_control: { type: 'ephemeral', ttl: '5m' } },
    ]);
    expect(longestCacheLifetime(request)).toBe('1h');
  });

  it('leave a prompt without breakpoints as it always was: the system prompt one string', () => {
    const plain = messagesRequestSchema.parse({
      model: 'anthropic:claude-haiku-4-5',
      max_tokens: 100,
      system: [
        { type: 'text', text: 'A' },
        { type: 'text', text: 'B' },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    });
    const sent = toAnthropicRequest(chatOf(plain), 1024);
    expect(sent.system).toBe('A\n\nB');
    expect(sent.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
  });
});

describe('cache breakpoints to another protocol', () => {
  it('are not sent: those providers cache by themselves', () => {
    const sent = requestForProtocol('openai_compatible', chatOf());
    expect(JSON.stringify(sent)).not.toContain('cache_control');
    expect(sent.messages[0]).toEqual({
      role: 'system',
      content: [
        { type: 'text', text: 'You are Claude Code.' },
        { type: 'text', text: 'Project rules.' },
      ],
    });
  });
});

describe('the hold of a prompt with breakpoints', () => {
  const env = {} as Env;
  const reference = parseModel('anthropic:claude-haiku-4-5');
  const rated = (inputTokens: number, outputTokens: number, writes: { cacheWriteTokens?: number; cacheWrite1hTokens?: number }) =>
    rateUsage(
      { routeMode: 'platform', provider: 'anthropic', model: 'claude-haiku-4-5', inputTokens, outputTokens, ...writes, estimated: true },
      {},
      ratingSettingsFor(env, null),
    ).retailUsd;
  /** The prompt with every breakpoint of the default five minutes. */
  const fiveMinutes = () => {
    const request = chatOf();
    const [system, ...rest] = request.messages;
    const parts = Array.isArray(system?.content) ? system.content.map(({ cache_control: _ttl, ...part }) => part) : [];
    return { ...request, messages: [{ ...system!, content: parts }, ...rest] } as ChatRequest;
  };

  it('prices the whole prompt at the cache-write price, above the plain input price', () => {
    const periods = currentPriceCatalog.find('anthropic', 'claude-haiku-4-5')?.periods ?? [];
    expect(periods.some((period) => 'cacheWritePerMillion' in period.prices)).toBe(true);
    const held = holdBounds(env, reference, requestForProtocol('anthropic', fiveMinutes()));
    const { worstCaseInputTokens: input, worstCaseOutputTokens: output } = held;
    expect(held.cacheLifetime).toBe('5m');
    expect(formatUsd(held.platform!)).toBe(formatUsd(rated(input, output, { cacheWriteTokens: input })));
    expect(compareUsd(rated(input, output, { cacheWriteTokens: input }), rated(input, output, {}))).toBeGreaterThan(0);
  });

  it('prices the whole prompt at the one-hour write price when one breakpoint asks an hour, whatever mix is then written', () => {
    const held = holdBounds(env, reference, { ...requestForProtocol('anthropic', chatOf()), stream: true });
    const { worstCaseInputTokens: input, worstCaseOutputTokens: output } = held;
    expect(held.cacheLifetime).toBe('1h');
    expect(formatUsd(held.platform!)).toBe(formatUsd(rated(input, output, { cacheWrite1hTokens: input })));
    // Never below what any split of the prompt into writes can cost.
    for (const oneHour of [0, 1, Math.floor(input / 2), input]) {
      const cost = rated(input, output, { cacheWriteTokens: input - oneHour, cacheWrite1hTokens: oneHour });
      expect(compareUsd(held.platform!, cost)).toBeGreaterThanOrEqual(0);
    }
    expect(compareUsd(held.platform!, rated(input, output, { cacheWriteTokens: input }))).toBeGreaterThan(0);
    // Streamed without thinking it grows with the answer (docs/quota.md): each quota step re-rates the
    // input at the same one-hour price (streaming/call-quota.ts).
    expect(held.cuttable).toBe(true);
    const step = grantHold(env, reference, { inputTokens: input, cacheWriteTokens: 0, cacheWrite1hTokens: input }, output);
    expect(formatUsd(step.platform!)).toBe(formatUsd(held.platform!));
  });
});
