/**
 * Holds that grow with the answer (quota-steps.ts), in Node: which calls can be cut, the stream's
 * arithmetic of grants (first grant, usable part, when to ask, how much), and the step decision table
 * on the room a wallet object holds.
 */
import { describe, expect, it } from 'vitest';
import { formatUsd, parseWireAmount } from '../money/index.ts';
import type { CallRoom } from './decide-call.ts';
import { asksNext, cuttable, decideQuotaStep, firstGrant, nextGrant, quotaSettings, usableTokens } from './quota-steps.ts';

const usd = (amount: string) => parseWireAmount(amount);
const settings = quotaSettings({});
const now = Date.UTC(2026, 10, 15, 12);
const runsUntil = now + 25 * 60_000;

describe('which calls can be cut', () => {
  it.each([
    ['a streamed call of a model that does not reason', { streamed: true, protocol: 'openai', thinking: false, modelReasons: false }, true],
    [
      'not streamed (today the gateway reads the upstream as the client asked)',
      { streamed: false, protocol: 'openai', thinking: false, modelReasons: false },
      false,
    ],
    [
      'a reasoning model: its reasoning tokens are billed, not streamed',
      { streamed: true, protocol: 'openai', thinking: false, modelReasons: true },
      false,
    ],
    ['a model models.dev does not list', { streamed: true, protocol: 'openai', thinking: false, modelReasons: null }, false],
    ['Claude without thinking', { streamed: true, protocol: 'anthropic', thinking: false, modelReasons: true }, true],
    [
      'Claude thinking: summarized or omitted thinking is billed in full',
      { streamed: true, protocol: 'anthropic', thinking: true, modelReasons: true },
      false,
    ],
    ['Gemini, which thinks by default', { streamed: true, protocol: 'gemini', thinking: false, modelReasons: true }, false],
  ] as const)('%s', (_name, facts, expected) => {
    expect(cuttable(facts)).toBe(expected);
  });
});

describe('the grants of a 32,000-token answer with the defaults (steps of 1,024, asked 512 ahead)', () => {
  it('reads its settings, the ask-ahead never beyond a step', () => {
    expect(settings).toEqual({ stepTokens: 1024, askAheadTokens: 512 });
    expect(quotaSettings({ QUOTA_STEP_TOKENS: '256', QUOTA_ASK_AHEAD_TOKENS: '4096' })).toEqual({ stepTokens: 256, askAheadTokens: 256 });
    expect(quotaSettings({ QUOTA_STEP_TOKENS: 'x' })).toEqual(settings);
  });

  it('is first held for two steps, within its whole bound', () => {
    expect(firstGrant(32_000, settings)).toBe(2048);
    expect(firstGrant(500, settings)).toBe(500);
  });

  it('may pass one step less than the grant; all of it once the grant is the whole bound', () => {
    expect(usableTokens(2048, 32_000, settings)).toBe(1024);
    expect(usableTokens(32_000, 32_000, settings)).toBe(Number.POSITIVE_INFINITY);
  });

  it('asks for the next step 512 tokens before the usable part is used up', () => {
    expect(asksNext(511, 2048, 32_000, settings)).toBe(false);
    expect(asksNext(512, 2048, 32_000, settings)).toBe(true);
  });

  it('asks a step beyond the grant; after a burst, a step beyond what was seen plus a step; never beyond the whole bound', () => {
    expect(nextGrant(600, 2048, 32_000, settings)).toBe(3072);
    expect(nextGrant(5_000, 2048, 32_000, settings)).toBe(7048);
    expect(nextGrant(31_500, 31_744, 32_000, settings)).toBe(32_000);
  });

  it('takes 30 steps to reach 32,000 tokens', () => {
    let granted = firstGrant(32_000, settings);
    let steps = 0;
    for (let seen = 0; granted < 32_000; seen += 1) {
      if (asksNext(seen, granted, 32_000, settings)) {
        granted = nextGrant(seen, granted, 32_000, settings);
        steps += 1;
      }
    }
    expect(steps).toBe(30);
  });
});

function roomOf(given: {
  lease?: string;
  committed?: string;
  renewed?: boolean;
  recalling?: boolean;
  month?: readonly [string, string];
  budget?: readonly [string, string];
  leaseEnds?: number;
}): CallRoom {
  return {
    now,
    renewed: given.renewed ?? false,
    recalling: given.recalling ?? false,
    lease: {
      amount: usd(given.lease ?? '0.10000000'),
      expiresAt: now + (given.leaseEnds ?? 50 * 60_000),
      spendLimits: given.month ? [{ period: 'month', limitUsd: given.month[0], room: usd(given.month[1]) }] : [],
      rate: null,
    },
    committed: usd(given.committed ?? '0.05000000'),
    unrecordedCalls: 1,
    callTimes: [now],
    keyBudgets: given.budget
      ? { 'key-1': { amount: usd(given.budget[0]), committed: usd(given.budget[1]), expiresAt: now + 50 * 60_000 } }
      : {},
    budgetShort: new Set(),
    claimedUntil: null,
  };
}

const step = (leaseGrowth: string, budget?: string) => ({
  leaseGrowth: usd(leaseGrowth),
  budgetGrowth: budget === undefined ? null : { keyId: 'key-1', amount: usd(budget) },
  runsUntil,
});

describe('a step decided on the room the object holds', () => {
  it.each([
    ['the lease covers the growth: granted with no renewal', step('0.01000000'), {}, { outcome: 'granted' }],
    ['exactly the lease left: granted', step('0.05000000'), {}, { outcome: 'granted' }],
    ['short: one renewal, for the growth', step('0.06000000'), {}, { outcome: 'needs_room', leaseNeed: '0.06000000', budgetNeed: null }],
    [
      'a recall under way: renew first',
      step('0.01000000'),
      { recalling: true },
      { outcome: 'needs_room', leaseNeed: '0.01000000', budgetNeed: null },
    ],
    [
      'a lease that ends before the call may: renew',
      step('0.01000000'),
      { leaseEnds: 60_000 },
      { outcome: 'needs_room', leaseNeed: '0.01000000', budgetNeed: null },
    ],
    ['renewed and still short: the balance', step('0.06000000'), { renewed: true }, { outcome: 'refused', code: 'insufficient_balance' }],
    [
      'renewed and the month limit short: names it',
      step('0.06000000'),
      { renewed: true, month: ['0.10000000', '0.10000000'] },
      { outcome: 'refused', code: 'spend_limit_month', refusedLimit: '0.10000000' },
    ],
    [
      'a key budget that covers it: granted',
      step('0.01000000', '0.01000000'),
      { budget: ['0.05000000', '0.02000000'] },
      { outcome: 'granted' },
    ],
    [
      'a key budget short: renew it',
      step('0.01000000', '0.04000000'),
      { budget: ['0.05000000', '0.02000000'] },
      { outcome: 'needs_room', leaseNeed: '0.01000000', budgetNeed: 'key-1 0.04000000' },
    ],
    [
      'renewed and the key budget short: budget_exceeded',
      step('0.01000000', '0.04000000'),
      { renewed: true, budget: ['0.05000000', '0.02000000'] },
      { outcome: 'refused', code: 'budget_exceeded' },
    ],
  ] as const)('%s', (_name, ask, room, expected) => {
    const decision = decideQuotaStep(ask, roomOf(room));
    const plain =
      decision.outcome === 'needs_room'
        ? {
            outcome: 'needs_room',
            leaseNeed: formatUsd(decision.leaseNeed),
            budgetNeed: decision.budgetNeed === null ? null : `${decision.budgetNeed.keyId} ${formatUsd(decision.budgetNeed.amount)}`,
          }
        : decision;
    expect(plain).toEqual(expected);
  });
});
