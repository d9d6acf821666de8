/**
 * A wallet object's quota step (docs/quota.md): a call in flight whose output the gateway counts as
 * it arrives asks for its hold to grow to a larger output bound before the granted one is used up.
 * The growth is decided by `decideQuotaStep` (workers/shared/authorize/quota-steps.ts) on the room
 * the object holds, with no Postgres round trip while the lease covers it; else the lease is renewed
 * once (lease-sync.ts) and what is still short is refused: the gateway ends the answer.
 *
 * A granted step is durable before it is answered: the call's record and bound say the new grant,
 * so a call never settled is booked at it (bound-booking.ts), never at more.
 */
import type { WalletQuotaAnswer, WalletQuotaStep } from '#shared/durable-objects.ts';
import { routeHold } from '#shared/authorize/decide-call.ts';
import { decideQuotaStep, type QuotaStepDecision } from '#shared/authorize/quota-steps.ts';
import { parseDatabaseAmount, usdFromUnits, usdToUnits, zeroUsd } from '#shared/money/index.ts';
import { callRoom, type StoredCall } from './lease-book.ts';
import type { LeaseSync } from './lease-sync.ts';
import type { WalletState } from './wallet-state.ts';

export class QuotaStep {
  constructor(
    private readonly state: WalletState,
    private readonly leases: LeaseSync,
  ) {}

  async extend(callId: string, step: WalletQuotaStep): Promise<WalletQuotaAnswer> {
    let call = this.inFlight(callId);
    if (call === null) return { outcome: 'refused', code: 'not_in_flight' };
    // A step asked again (a retried RPC) or overtaken: what is held already covers it.
    if (step.outputTokens <= call.record.bound_output_tokens) return { outcome: 'granted' };
    let grown = this.grown(call, step);
    let decision = decideQuotaStep(grown.ask, this.room(false));
    if (decision.outcome === 'needs_room') {
      const { budgetNeed } = decision;
      await this.leases.sync(
        usdToUnits(decision.leaseNeed),
        budgetNeed === null ? {} : { budgetNeed: { keyId: budgetNeed.keyId, units: usdToUnits(budgetNeed.amount) } },
      );
      // The renewal awaited Postgres: the call may have been settled or swept meanwhile.
      call = this.inFlight(callId);
      if (call === null) return { outcome: 'refused', code: 'not_in_flight' };
      if (step.outputTokens <= call.record.bound_output_tokens) return { outcome: 'granted' };
      grown = this.grown(call, step);
      decision = decideQuotaStep(grown.ask, this.room(true));
    }
    return this.answer(call, step, grown, decision);
  }

  private async answer(
    call: StoredCall,
    step: WalletQuotaStep,
    grown: { holdUnits: bigint; budgetUnits: bigint | undefined; outputTokens: number },
    decision: QuotaStepDecision,
  ): Promise<WalletQuotaAnswer> {
    if (decision.outcome === 'needs_room') throw new Error('a renewed room is decided, never asked to grow');
    if (decision.outcome === 'refused') {
      return {
        outcome: 'refused',
        code: decision.code,
        ...(decision.refusedLimit === undefined ? {} : { refusedLimit: decision.refusedLimit }),
      };
    }
    const extended: StoredCall = {
      ...call,
      reservedUnits: grown.holdUnits,
      ...(grown.budgetUnits === undefined ? {} : { budgetUnits: grown.budgetUnits }),
      record: { ...call.record, bound_output_tokens: grown.outputTokens },
      rating: {
        ...call.rating,
        // Once a model answers, it is the only candidate: a call never settled is booked at its bound.
        candidates: [{ ...step.candidate, boundOutputTokens: grown.outputTokens }],
      },
    };
    this.state.calls.set(call.id, extended);
    await this.state.ctx.storage.put(`call:${call.id}`, extended);
    return { outcome: 'granted' };
  }

  /** The call's hold (and key budget reservation) at the step's bound, and what each grows by. */
  private grown(call: StoredCall, step: WalletQuotaStep) {
    const { rating } = call;
    const route = rating.routeMode ?? 'platform';
    const outputTokens = Math.min(step.outputTokens, rating.maxOutputTokens ?? step.outputTokens);
    const platformWorst = step.platformHold === null ? zeroUsd() : parseDatabaseAmount(step.platformHold);
    const keyWorst = step.catalogCost === null ? zeroUsd() : parseDatabaseAmount(step.catalogCost);
    const prices = {
      openFee: rating.openFeeUsd === null ? null : parseDatabaseAmount(rating.openFeeUsd),
      developerPricePerMtok: rating.developerPricePerMtokUsd === null ? null : parseDatabaseAmount(rating.developerPricePerMtokUsd),
    };
    const hold = routeHold(route, prices, step.candidate.boundInputTokens + outputTokens, platformWorst, keyWorst);
    const holdUnits = maxUnits(usdToUnits(hold), call.reservedUnits);
    const keyId = route === 'developer_key' ? (rating.providerCredentialId ?? null) : null;
    const budgetUnits = keyId === null ? undefined : maxUnits(usdToUnits(keyWorst), call.budgetUnits ?? 0n);
    return {
      holdUnits,
      budgetUnits,
      outputTokens,
      // A step never gives back: each amount is at least what the call holds already.
      ask: {
        leaseGrowth: usdFromUnits(holdUnits - call.reservedUnits),
        budgetGrowth:
          keyId === null || budgetUnits === undefined ? null : { keyId, amount: usdFromUnits(budgetUnits - (call.budgetUnits ?? 0n)) },
        runsUntil: call.sweepAt,
      },
    };
  }

  private inFlight(callId: string): StoredCall | null {
    const call = this.state.calls.get(callId);
    return call === undefined || call.state !== 'in_flight' ? null : call;
  }

  private room(renewed: boolean) {
    const { state } = this;
    return callRoom({
      lease: state.meta.lease,
      calls: state.calls.values(),
      now: Date.now(),
      renewed,
      recalling: this.leases.recalling(),
      budgetShort: new Set(),
      claimedUntil: null,
    });
  }
}

const maxUnits = (a: bigint, b: bigint): bigint => (a > b ? a : b);
