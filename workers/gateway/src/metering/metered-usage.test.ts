import { describe, expect, it } from 'vitest';
import { tokenUsage, totalInputTokens, totalOutputTokens } from '#shared/providers/token-usage.ts';
import { meteredUsage, ratingTokens, tokenUsageFromOpenAi } from './metered-usage.ts';

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
    expect(tokens).toEqual(
      tokenUsage({ input: 250, cachedInput: 600, cacheWrite: 100, audioInput: 50, output: 420, reasoning: 320, audioOutput: 80 }),
    );
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
    expect(tokens).toEqual(tokenUsage({ input: 0, cachedInput: 8, cacheWrite: 2, audioInput: 0, output: 3, reasoning: 3, audioOutput: 1 }));
  });

  it('takes the one-hour part of the cache writes as its own class, the rest as five-minute writes', () => {
    const tokens = tokenUsageFromOpenAi({
      prompt_tokens: 1_000,
      completion_tokens: 5,
      prompt_tokens_details: { cached_tokens: 200, cache_write_tokens: 700, cache_write_1h_tokens: 500 },
    });
    expect(tokens).toEqual(tokenUsage({ input: 100, cachedInput: 200, cacheWrite: 200, cacheWrite1h: 500, output: 5 }));
    expect(totalInputTokens(tokens)).toBe(1_000);
    expect(ratingTokens({ tokens, estimated: false })).toMatchObject({
      inputTokens: 1_000,
      cacheWriteTokens: 200,
      cacheWrite1hTokens: 500,
    });
  });

  it('clamps the one-hour writes to the writes, and the writes to what the cache reads leave of the prompt', () => {
    const tokens = tokenUsageFromOpenAi({
      prompt_tokens: 10,
      completion_tokens: 1,
      prompt_tokens_details: { cached_tokens: 4, cache_write_tokens: 9, cache_write_1h_tokens: 20 },
    });
    expect(tokens).toEqual(tokenUsage({ cachedInput: 4, cacheWrite1h: 6, output: 1 }));
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
