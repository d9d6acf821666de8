/**
 * The wallet object's accounts on a developer key's budget lease (lease-book.ts), in Node: what a
 * call holds of the budget on each route and state, whether one more call fits, the developer-key
 * hold rounded up as faucet_developer_price rounds it, and the budgets a renewal grants.
 */
import { describe, expect, it } from 'vitest';
import { budgetCommittedUnits, budgetFit, developerKeyHold, heldKeyBudgets, mergeKeyBudgets, type StoredCall } from './lease-book.ts';

const key = '11111111-1111-4111-8111-111111111111';
const other = '22222222-2222-4222-8222-222222222222';

function call(state: StoredCall['state'], routeMode: 'platform' | 'developer_key', credential: string | null): StoredCall {
  return {
    id: crypto.randomUUID(),
    moneyKey: 'call:x',
    clientRequestId: 'r',
    state,
    reservedUnits: 500n,
    budgetUnits: 300n,
    retailUnits: 200n,
    sweepAt: 0,
    record: {},
    rating: {
      developerShareBps: null,
      developerPricePerMtokUsd: null,
      openFeeUsd: null,
      maxOutputTokens: null,
      platformMarkupBps: 0,
      platformFeeBps: 0,
      authorizedAt: 0,
      featureKey: 'chat',
      appId: 'a',
      endUserId: 'u',
      candidates: [],
      routeMode,
      providerCredentialId: credential,
    },
    booking: state === 'settled' ? { upstream_cost: '0.00000120' } : null,
    refusal: null,
  };
}

describe("a developer key's budget lease in the object", () => {
  it('counts a call on the key at its worst-case cost in flight, its recorded cost settled, nothing refused or on another key or route', () => {
    expect(budgetCommittedUnits(call('in_flight', 'developer_key', key), key)).toBe(300n);
    expect(budgetCommittedUnits(call('settled', 'developer_key', key), key)).toBe(120n);
    expect(budgetCommittedUnits(call('refused', 'developer_key', key), key)).toBe(0n);
    expect(budgetCommittedUnits(call('in_flight', 'developer_key', other), key)).toBe(0n);
    expect(budgetCommittedUnits(call('in_flight', 'platform', null), key)).toBe(0n);
  });

  it('fits a call only with room for its worst case and a lease outliving it, or ending at the month it is alive in', () => {
    const budget = { units: 1_000n, expiresAt: 10_000 };
    expect(budgetFit(budget, 700n, 300n, 10_000, 0)).toBe('covered');
    expect(budgetFit(budget, 701n, 300n, 10_000, 0)).toBe('no_room');
    expect(budgetFit(budget, 700n, 300n, 10_001, 0)).toBe('ends_first');
    expect(budgetFit(undefined, 0n, 0n, 0, 0)).toBe('no_room');
    // Granted until the next month's start (Postgres never lends further): it covers a call
    // authorized before that instant, even one that may run past it, and none after.
    const monthStart = Date.UTC(2026, 11, 1);
    const monthEnd = { units: 1_000n, expiresAt: monthStart };
    expect(budgetFit(monthEnd, 0n, 300n, monthStart + 600_000, monthStart - 1_000)).toBe('covered');
    expect(budgetFit(monthEnd, 0n, 300n, monthStart + 600_000, monthStart)).toBe('ends_first');
    expect(budgetFit({ units: 1_000n, expiresAt: monthStart + 1 }, 0n, 300n, monthStart + 600_000, monthStart - 1_000)).toBe('ends_first');
  });

  it("holds the feature's price for the bound tokens rounded up to 10⁻⁸ USD, else the catalog cost", () => {
    // 2.5 USD per million × 3 tokens = 0.0000075 → 0.00000750 exactly; × 1 token = 0.0000025 → 0.00000250.
    expect(developerKeyHold('2.50000000', 3, 99n)).toBe(750n);
    // 0.00000001 USD per million × 1 token rounds up to one unit.
    expect(developerKeyHold('0.00000001', 1, 99n)).toBe(1n);
    expect(developerKeyHold(null, 1_000, 99n)).toBe(99n);
  });

  it('keeps the keys a renewal granted something of, and forgets one granted nothing', () => {
    expect(heldKeyBudgets({ [key]: { amount: '0.10000000', expiresAt: 5 }, [other]: { amount: '0.00000000', expiresAt: null } })).toEqual({
      [key]: { units: 10_000_000n, expiresAt: 5 },
    });
    const held = { [key]: { units: 1n, expiresAt: 1 }, [other]: { units: 2n, expiresAt: 2 } };
    expect(mergeKeyBudgets(held, { [other]: { amount: '0.00000000', expiresAt: null } })).toEqual({ [key]: { units: 1n, expiresAt: 1 } });
  });
});
