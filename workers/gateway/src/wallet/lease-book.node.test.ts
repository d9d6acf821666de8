/**
 * The wallet object's accounts on a developer key's budget lease (lease-book.ts), in Node: what a
 * call holds of the budget on each route and state, and the budgets a renewal grants. Whether one
 * more call fits, and its hold, are the decision's (workers/shared/authorize/decide-call.node.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { budgetCommittedUnits, heldKeyBudgets, mergeKeyBudgets, type StoredCall } from './lease-book.ts';
import type { CallRecordColumns } from '#shared/wallet/settle-lease.ts';

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
    // Not read by what is tested here.
    record: {} as CallRecordColumns,
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

  it('keeps the keys a renewal granted something of, and forgets one granted nothing', () => {
    expect(heldKeyBudgets({ [key]: { amount: '0.10000000', expiresAt: 5 }, [other]: { amount: '0.00000000', expiresAt: null } })).toEqual({
      [key]: { units: 10_000_000n, expiresAt: 5 },
    });
    const held = { [key]: { units: 1n, expiresAt: 1 }, [other]: { units: 2n, expiresAt: 2 } };
    expect(mergeKeyBudgets(held, { [other]: { amount: '0.00000000', expiresAt: null } })).toEqual({ [key]: { units: 1n, expiresAt: 1 } });
  });
});
