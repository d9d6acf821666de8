/**
 * A streamed call whose answering model's output can be counted as it arrives is held for a quota
 * that grows with the answer (docs/quota.md): the metered stream asks the wallet object for each step
 * at that model's prices. Not on the byok route, whose hold (the open fee) does not grow with tokens.
 */
import type { WalletQuotaAnswer } from '#shared/durable-objects.ts';
import type { Env } from '#shared/env.ts';
import { quotaSettings } from '#shared/authorize/quota-steps.ts';
import { formatUsd } from '#shared/money/index.ts';
import type { PriceCatalog } from '#shared/rating/index.ts';
import type { Candidate } from '../fallback/hold-candidates.ts';
import { grantHold, heldInput } from '../metering/hold-bounds.ts';
import type { CallPlan } from '../routing/call-plan.ts';
import type { QuotaOptions } from './quota-meter.ts';

export function callQuota(env: Env, plan: CallPlan, candidate: Candidate, catalog?: PriceCatalog): { quota?: QuotaOptions } {
  const { bounds, reference } = candidate;
  if (bounds === null || !bounds.cuttable || plan.routeMode === 'byok') return {};
  // The feature's output cap bounds every grant, as it bounds the first hold.
  const cap = plan.maxOutputTokens ?? bounds.wholeOutputTokens;
  const input = heldInput(bounds);
  return {
    quota: {
      granted: Math.min(bounds.worstCaseOutputTokens, cap),
      worst: Math.min(bounds.wholeOutputTokens, cap),
      settings: quotaSettings(env),
      extend: (outputTokens) => {
        const hold = grantHold(env, reference, input, outputTokens, catalog);
        const step = {
          outputTokens,
          platformHold: hold.platform === null ? null : formatUsd(hold.platform),
          catalogCost: hold.developerKeyAtCost === null ? null : formatUsd(hold.developerKeyAtCost),
          candidate: { provider: reference.provider, model: reference.model, boundInputTokens: bounds.worstCaseInputTokens },
        };
        // Once more on a fresh stub: one broken by the object's restart stays broken (a step is idempotent).
        const { wallet } = plan;
        const ask = (stub: typeof wallet.stub): Promise<WalletQuotaAnswer> => stub.extend(plan.keys.callId, step);
        return ask(wallet.stub).catch(() => ask(wallet.fresh()));
      },
    },
  };
}
