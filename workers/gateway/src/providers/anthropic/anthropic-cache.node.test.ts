/**
 * Anthropic prompt caching through the chat pipeline: the breakpoints a Messages client sets
 * (`cache_control` on system blocks, text, images, tool results, tools) reach an Anthropic model
 * where the client put them, always as five-minute writes (the kind the catalog prices); other
 * protocols never see them; and a prompt that may be written to the cache is held at the
 * cache-write price, so a booking can never exceed its hold.
 */
import { describe, expect, it } from 'vitest';
import type { Env } from '#shared/env.ts';
import { compareUsd, formatUsd } from '#shared/money/index.ts';
import { currentPriceCatalog, rateUsage, ratingSettingsFor } from '#shared/rating/index.ts';
import type { ChatRequest } from '../../openai/chat-schemas.ts';
import { holdBounds } from '../../metering/hold-bounds.ts';
import { parseModel } from '../../routing/parse-model.ts';
import { chatRequestOfMessages } from '../../surfaces/messages/chat-request-of-messages.ts';
import { messagesRequestSchema } from '../../surfaces/messages/messages-request.ts';
import { requestForProtocol } from '../accepted-fields.ts';
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
  it('sit where the client put them, a one-hour breakpoint sent as the five-minute kind the catalog prices', () => {
    const sent = toAnthropicRequest(requestForProtocol('anthropic', chatOf()), 1024);
    expect(sent.system).toEqual([
      { type: 'text', text: 'You are Claude Code.' },
      { type: 'text', text: 'Project rules.', cache_control: ephemeral },
    ]);
    expect(sent.tools).toEqual([{ name: 'Read', input_schema: { type: 'object' }, cache_control: ephemeral }]);
    expect(sent.messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello', cache_control: ephemeral },
        { type: 'text', text: 'Summarise it.', cache_control: ephemeral },
      ],
    });
    expect(JSON.stringify(sent)).not.toContain('"1h"');
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
  it('prices the whole prompt at the cache-write price, above the plain input price', () => {
    const env = {} as Env;
    const reference = parseModel('anthropic:claude-haiku-4-5');
    const periods = currentPriceCatalog.find('anthropic', 'claude-haiku-4-5')?.periods ?? [];
    expect(periods.some((period) => 'cacheWritePerMillion' in period.prices)).toBe(true);
    const held = holdBounds(env, reference, requestForProtocol('anthropic', chatOf()));
    const { worstCaseInputTokens: inputTokens, worstCaseOutputTokens: outputTokens } = held;
    const rated = (cacheWriteTokens: number) =>
      rateUsage(
        {
          routeMode: 'platform',
          provider: 'anthropic',
          model: 'claude-haiku-4-5',
          inputTokens,
          outputTokens,
          cacheWriteTokens,
          estimated: true,
        },
        {},
        ratingSettingsFor(env, null),
      ).retailUsd;
    expect(formatUsd(held.platform!)).toBe(formatUsd(rated(inputTokens)));
    expect(compareUsd(rated(inputTokens), rated(0))).toBeGreaterThan(0);
  });
});
