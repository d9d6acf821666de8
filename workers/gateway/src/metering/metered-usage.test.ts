import { describe, expect, it } from 'vitest';
import { tokenUsage, totalInputTokens, totalOutputTokens } from '#shared/providers/token-usage.ts';
import { meteredUsage, tokenUsageFromOpenAi } from './metered-usage.ts';

const noEstimate = () => {
  throw new Error('the reported usage must be used');
};

describe('metered usage: OpenAI-convention usage → token classes', () => {
  it('splits prompt tokens into uncached, cache read, cache write and audio; completion into text and audio with reasoning a part of text', () => {
    const tokens = tokenUsageFromOpenAi({
      prompt_tokens: 1_000,
      completion_tokens: 500,
      prompt_tokens_details: { cached_tokens: 600, cache_write_tokens: 100, audio_tokens: 50 },
      completion_tokens_details: { reasoning_tokens: 320, audio_tokens: 80 },
    });
    expect(tokens).toEqual({ input: 250, cachedInput: 600, cacheWrite: 100, audioInput: 50, output: 420, reasoning: 320, audioOutput: 80 });
    expect(totalInputTokens(tokens)).toBe(1_000);
    expect(totalOutputTokens(tokens)).toBe(500);
  });

  it('clamps details larger than what is left of their total, so the classes never add up to more than the provider billed', () => {
    const tokens = tokenUsageFromOpenAi({
      prompt_tokens: 10,
      completion_tokens: 4,
      prompt_tokens_details: { cached_tokens: 8, cache_write_tokens: 5, audio_tokens: 5 },
      completion_tokens_details: { reasoning_tokens: 9, audio_tokens: 1 },
    });
    expect(tokens).toEqual({ input: 0, cachedInput: 8, cacheWrite: 2, audioInput: 0, output: 3, reasoning: 3, audioOutput: 1 });
  });

  it('treats absent, null and malformed details as zero', () => {
    expect(tokenUsageFromOpenAi({ prompt_tokens: 7, completion_tokens: 3, prompt_tokens_details: null })).toEqual(
      tokenUsage({ input: 7, output: 3 }),
    );
  });

  it('uses the reported usage when there is one, else the estimate marked estimated', () => {
    expect(meteredUsage({ prompt_tokens: 2, completion_tokens: 1 }, noEstimate)).toEqual({
      tokens: tokenUsage({ input: 2, output: 1 }),
      estimated: false,
    });
    expect(meteredUsage(null, () => ({ inputTokens: 9, outputTokens: 4 }))).toEqual({
      tokens: tokenUsage({ input: 9, output: 4 }),
      estimated: true,
    });
  });
});
