/**
 * After the upstream: rate the call and hand its booking to the wallet object that authorized it,
 * which keeps it durably and books it with its next flush (usage record, ledger entries, call record);
 * or, when the upstream never accepted the call, abandon it so nothing is charged and its request id
 * can be retried.
 */
import type { BookUsageInput } from '#shared/ledger/book-usage.ts';
import { bookingElement } from '#shared/ledger/book-usage-batch.ts';
import { formatUsd, type Usd } from '#shared/money/index.ts';
import type { WalletSettlement } from '#shared/durable-objects.ts';
import type { CallLogFacts } from '#shared/calls/call-log.ts';
import { keepUnsent } from '../wallet/unsent-settlements.ts';
import { featurePricingMetadata, type PriceCatalog, rateUsage } from '#shared/rating/index.ts';
import type { CallPlan } from '../routing/call-plan.ts';
import type { ModelReference } from '../routing/parse-model.ts';
import { faucetObject, type FaucetObject } from './faucet-object.ts';
import { ratingTokens, type MeteredUsage } from './metered-usage.ts';

/**
 * The upstream answered: the call is booked, always. If the wallet cannot cover it (the cost
 * outgrew what the gateway could bound, or the hold lapsed), the booking is still written and the
 * shortfall recorded as a receivable: content delivered is never left unbilled.
 */
export interface SettleOptions {
  catalog?: PriceCatalog;
  /**
   * A leased call's settlement, handed over unsent: the caller sends it once the answer has left and
   * keeps the request alive for it. Absent, the answer waits for the object to have it.
   */
  background?: (send: () => Promise<void>) => void;
}

export async function settleCall(
  plan: CallPlan,
  reference: ModelReference,
  usage: MeteredUsage,
  options: SettleOptions = {},
  log?: CallLogFacts,
): Promise<FaucetObject> {
  const { catalog } = options;
  const counts = ratingTokens(usage);
  const rated = rateUsage(
    // The prices, settings and price period the call was authorized with, never re-read: a change applies to later calls.
    { routeMode: plan.routeMode, provider: reference.provider, model: reference.model, ...counts, pricedAt: plan.pricedAt },
    plan.featurePricing,
    plan.ratingSettings,
    catalog,
  );
  const input: BookUsageInput = {
    requestId: plan.keys.moneyKey,
    clientRequestId: plan.keys.clientRequestId,
    callId: plan.keys.callId,
    appId: plan.appId,
    endUserId: plan.endUserId,
    featureKey: plan.featureKey,
    rated,
    providerCredentialId: plan.providerCredentialId,
    allowReceivable: true,
    metadata: { feature_pricing: featurePricingMetadata(plan.featureKey, plan.featurePricing) },
  };
  const answer = (amounts: { retailUsd: Usd; upstreamCostUsd: Usd }) =>
    faucetObject({
      requestId: plan.keys.clientRequestId,
      feature: plan.featureKey,
      routeMode: plan.routeMode,
      provider: reference.provider,
      model: reference.model,
      inputTokens: counts.inputTokens,
      outputTokens: counts.outputTokens,
      estimated: usage.estimated,
      ...amounts,
    });
  const { wallet } = plan;
  // The wallet object keeps the settlement durably and books it with its next flush; its lease
  // covers the charge, so the answer carries it now (docs/edge.md). The object has kept the call in
  // flight at its worst case since `authorize`: a settlement that never arrives leaves it booked at
  // that bound by the object's alarm, never unbooked. So the answer need not wait for the
  // settlement, nor even for it to be sent.
  let settlement: WalletSettlement | undefined;
  const settlementOnce = () =>
    (settlement ??= { booking: bookingElement(input), retailUsd: formatUsd(rated.retailUsd), ...(log === undefined ? {} : { log }) });
  const ownTurn = options.background === undefined ? async () => true : keepUnsent(wallet.name, plan.keys.callId, settlementOnce);
  const send = async () => {
    // Carried meanwhile by a later call's `authorize` that the object answered: the object has it.
    if (!(await ownTurn())) return;
    // Once more on a fresh stub: one broken by the object's restart stays broken.
    const settle = (stub: typeof wallet.stub) => stub.settle(plan.keys.callId, settlementOnce());
    return settle(wallet.stub).catch(() => settle(wallet.fresh()));
  };
  if (options.background === undefined) await send();
  else options.background(send);
  return answer({ retailUsd: rated.retailUsd, upstreamCostUsd: rated.upstreamCostUsd });
}

/** The upstream never accepted the call: free the hold and budget, charge nothing, free the request id. */
/** `log`: how the call went, for the developer's request log (nothing is booked). */
export async function abandonCall(plan: CallPlan, log?: CallLogFacts): Promise<void> {
  await plan.wallet.stub.abandon(plan.keys.callId, log);
}
