import { describe, expect, it } from 'vitest';
import { compareUsd, formatUsd, parseWireAmount } from '../money/index.ts';
import { outputTokenCap } from '../rating/model-limits.ts';
import { defaultRatingSettings, rateUsage } from '../rating/index.ts';
import { rateAtBound, type BoundCandidate } from './rate-at-bound.ts';

const pricedAt = new Date('2026-11-01T12:00:00Z');
const bound = (provider: string, model: string, inputTokens = 1_000, outputTokens = 4_000): BoundCandidate => ({
  provider,
  model,
  inputTokens,
  outputTokens,
});
const retailOf = (provider: string, model: string, routeMode = 'platform') =>
  rateUsage({ routeMode, provider, model, inputTokens: 1_000, outputTokens: 4_000, estimated: true, pricedAt }).retailUsd;

describe('rateAtBound: the one rule for a call never settled', () => {
  it('books at the costliest candidate by retail, wherever it stands, marked estimated', () => {
    // The pricier model is the fallback: booking the first would leave the platform paying more than it billed.
    expect(compareUsd(retailOf('openai', 'gpt-4o'), retailOf('openai', 'gpt-4o-mini'))).toBe(1);
    for (const candidates of [
      [bound('openai', 'gpt-4o-mini'), bound('openai', 'gpt-4o')],
      [bound('openai', 'gpt-4o'), bound('openai', 'gpt-4o-mini')],
    ]) {
      const rated = rateAtBound({ routeMode: 'platform', candidates, pricedAt }, {}, defaultRatingSettings);
      expect(rated).toMatchObject({ model: 'gpt-4o', inputTokens: 1_000, outputTokens: 4_000, estimated: true });
      expect(formatUsd(rated.retailUsd)).toBe(formatUsd(retailOf('openai', 'gpt-4o')));
    }
  });

  it('breaks a tie on retail by the larger upstream cost (the developer price is the same for every model)', () => {
    const perMillion = parseWireAmount('2.00000000');
    const pricing = { developerPrice: { inputPerMillion: perMillion, outputPerMillion: perMillion } };
    const candidates = [bound('openai', 'gpt-4o-mini'), bound('openai', 'gpt-4o')];
    const rated = rateAtBound({ routeMode: 'developer_key', candidates, pricedAt }, pricing, defaultRatingSettings);
    expect(rated.model).toBe('gpt-4o');
    const reversed = rateAtBound(
      { routeMode: 'developer_key', candidates: [...candidates].reverse(), pricedAt },
      pricing,
      defaultRatingSettings,
    );
    expect(reversed.model).toBe('gpt-4o');
    expect(formatUsd(reversed.retailUsd)).toBe(formatUsd(rated.retailUsd));
  });

  it('books the input of a prompt with cache breakpoints at the write price of their longest lifetime, as its hold priced it', () => {
    const candidates = [bound('anthropic', 'claude-sonnet-4-5')];
    const plain = rateAtBound({ routeMode: 'platform', candidates, pricedAt }, {}, defaultRatingSettings);
    const fiveMinutes = rateAtBound({ routeMode: 'platform', candidates, pricedAt, cacheLifetime: '5m' }, {}, defaultRatingSettings);
    const oneHour = rateAtBound({ routeMode: 'platform', candidates, pricedAt, cacheLifetime: '1h' }, {}, defaultRatingSettings);
    expect(fiveMinutes).toMatchObject({ inputTokens: 1_000, cacheWriteTokens: 1_000, cacheWrite1hTokens: 0 });
    expect(oneHour).toMatchObject({ inputTokens: 1_000, cacheWriteTokens: 0, cacheWrite1hTokens: 1_000 });
    // 3.00 / 3.75 / 6.00 USD per million input tokens (plain, five-minute write, one-hour write); 15.00 output.
    expect(formatUsd(plain.upstreamCostUsd)).toBe('0.06300000');
    expect(formatUsd(fiveMinutes.upstreamCostUsd)).toBe('0.06375000');
    expect(formatUsd(oneHour.upstreamCostUsd)).toBe('0.06600000');
  });

  it("never books output past the model's own cap", () => {
    const cap = outputTokenCap('openai', 'gpt-4o-mini');
    const rated = rateAtBound(
      { routeMode: 'platform', candidates: [bound('openai', 'gpt-4o-mini', 10, cap * 10)], pricedAt },
      {},
      defaultRatingSettings,
    );
    expect(rated.outputTokens).toBe(cap);
  });

  it('skips a fallback the catalog cannot price, and fails when the first cannot be priced', () => {
    const candidates = [bound('openai', 'gpt-4o-mini'), bound('openai', 'no-such-model-anywhere')];
    expect(rateAtBound({ routeMode: 'platform', candidates, pricedAt }, {}, defaultRatingSettings).model).toBe('gpt-4o-mini');
    expect(() =>
      rateAtBound({ routeMode: 'platform', candidates: [...candidates].reverse(), pricedAt }, {}, defaultRatingSettings),
    ).toThrow();
    expect(() => rateAtBound({ routeMode: 'platform', candidates: [], pricedAt }, {}, defaultRatingSettings)).toThrow();
  });
});
