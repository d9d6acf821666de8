/**
 * After the upstream: rate the call and book it (usage record, ledger entries, hold settlement) in
 * one statement; or, when the upstream failed, release the hold so nothing is charged.
 */
import type { Env } from '../../../shared/env.ts';
import { FaucetError } from '../../../shared/errors.ts';
import { bookUsage } from '../../../shared/ledger/book-usage.ts';
import type { LedgerDatabase } from '../../../shared/ledger/database.ts';
import { releaseHold } from '../../../shared/ledger/holds.ts';
import { releaseBudgetReservation } from '../../../shared/provider-keys/budget-reservation.ts';
import { rateUsage, ratingSettingsFor } from '../../../shared/rating/index.ts';
import type { CallPlan } from '../routing/authorize-call.ts';
import type { ModelReference } from '../routing/parse-model.ts';
import { faucetObject, type FaucetObject } from './faucet-object.ts';
import type { MeteredUsage } from './metered-usage.ts';

export async function settleCall(
  db: LedgerDatabase,
  env: Env,
  plan: CallPlan,
  reference: ModelReference,
  requestId: string,
  usage: MeteredUsage,
): Promise<FaucetObject> {
  const rated = rateUsage(
    { routeMode: plan.routeMode, provider: reference.provider, model: reference.model, ...usage },
    plan.featurePricing,
    ratingSettingsFor(env, plan.developerShareBps),
  );
  const booking = await bookUsage(db, {
    requestId,
    appId: plan.appId,
    endUserId: plan.endUserId,
    featureKey: plan.featureKey,
    rated,
    providerCredentialId: plan.providerCredentialId,
  }).catch(async (error: unknown) => {
    // The booking failed (e.g. the connection was cut): free the hold now instead of when it expires.
    // A no-op if the booking did commit, since its hold is then settled and its reservation used.
    await abandonCall(db, plan, requestId).catch(() => undefined);
    throw error;
  });
  if (booking.outcome === 'insufficient_balance') {
    // Only reachable when the wallet was debited elsewhere past its holds; the hold stays until it expires.
    throw new FaucetError('insufficient_balance', 'The balance no longer covers the cost of this call.');
  }
  return faucetObject({
    requestId,
    routeMode: plan.routeMode,
    provider: reference.provider,
    model: reference.model,
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    estimated: usage.estimated,
    retailUsd: booking.retailUsd,
    upstreamCostUsd: booking.upstreamCostUsd,
  });
}

/** The upstream failed before anything was delivered: free the hold, charge nothing. */
export async function abandonCall(db: LedgerDatabase, plan: CallPlan, requestId: string): Promise<void> {
  if (plan.held) await releaseHold(db, requestId);
  if (plan.routeMode === 'developer_key') await releaseBudgetReservation(db, requestId);
}
