/**
 * Holds that grow with the answer (docs/quota.md): prepaid credit control (Diameter's CCR-Update) for
 * a model call. A call whose output the gateway can count as it arrives is held for its input and a
 * first output quota, not for its whole `max_tokens`; the metered stream asks its wallet object for
 * the next quota before the granted one is used up, and the answer ends (`finish_reason: "length"`)
 * when a step is refused. Pure: the gateway's stream and the wallet object both decide through here.
 *
 * Output is counted in UTF-8 bytes: a byte-level BPE token is at least one byte, so the bytes seen
 * bound the tokens the provider produced for them. The grant always stays one step ahead of what was
 * seen (`usableTokens`), which covers what the provider produces between its last chunk and the abort.
 */
import type { Usd } from '../money/index.ts';
import { type Env, intSetting } from '../env.ts';
import { budgetFit, type CallRoom, leaseHolds, refusingLimit } from './decide-call.ts';

export interface QuotaSettings {
  /** Output tokens one step grants (`QUOTA_STEP_TOKENS`, default 1024). */
  stepTokens: number;
  /** How far ahead of the usable grant the next step is asked for (`QUOTA_ASK_AHEAD_TOKENS`, default 512). */
  askAheadTokens: number;
}

export function quotaSettings(env: Pick<Env, 'QUOTA_STEP_TOKENS' | 'QUOTA_ASK_AHEAD_TOKENS'>): QuotaSettings {
  const stepTokens = Math.max(1, intSetting(env.QUOTA_STEP_TOKENS, 1024));
  return { stepTokens, askAheadTokens: Math.min(intSetting(env.QUOTA_ASK_AHEAD_TOKENS, 512), stepTokens) };
}

/** What decides whether a call's output can be counted as it arrives, and so cut. */
export interface CuttableFacts {
  /**
   * The gateway reads the upstream as a stream: every chat protocol's adapter can, whether or not the
   * client asked for a stream (a call not streamed is buffered). Not an upstream that answers whole.
   */
  streamed: boolean;
  /** The provider's protocol: Anthropic models think only when the request turns thinking on. */
  protocol: string;
  /** The request turns Anthropic's thinking on (`enabled` or `adaptive`). */
  thinking: boolean;
  /** models.dev's `reasoning` flag of the model: null when the model is not listed. */
  modelReasons: boolean | null;
}

/**
 * Whether every output token the provider bills passes through the stream, so the bytes seen bound
 * it. Not when the model reasons out of sight (OpenAI's reasoning tokens, Gemini's thoughts, Claude's
 * summarized or omitted thinking are billed in full and streamed in part or not at all), nor when the
 * model is unknown: those calls keep the worst-case hold.
 */
export function cuttable(facts: CuttableFacts): boolean {
  if (!facts.streamed) return false;
  if (facts.protocol === 'anthropic') return !facts.thinking;
  return facts.modelReasons === false;
}

/** The output a cuttable call is first held for: two steps (one usable, one ahead), within its whole bound. */
export function firstGrant(worstOutputTokens: number, settings: QuotaSettings): number {
  return Math.min(worstOutputTokens, 2 * settings.stepTokens);
}

/**
 * How much output may pass while `granted` is held: one step less (the provider may produce up to a
 * step between a chunk and the abort); all of it once the grant reaches the call's whole bound, which
 * the provider cannot pass.
 */
export function usableTokens(granted: number, worstOutputTokens: number, settings: QuotaSettings): number {
  return granted >= worstOutputTokens ? Number.POSITIVE_INFINITY : granted - settings.stepTokens;
}

/** Whether the stream asks for the next step now: it is within `askAheadTokens` of the usable grant. */
export function asksNext(seen: number, granted: number, worstOutputTokens: number, settings: QuotaSettings): boolean {
  return seen >= usableTokens(granted, worstOutputTokens, settings) - settings.askAheadTokens;
}

/** The grant the next step asks for: a step beyond the larger of the grant and what was seen plus a step (a burst), within the whole bound. */
export function nextGrant(seen: number, granted: number, worstOutputTokens: number, settings: QuotaSettings): number {
  return Math.min(worstOutputTokens, Math.max(granted, seen + settings.stepTokens) + settings.stepTokens);
}

/** Why a step was refused: the answer ends, and its `faucet` object says why (`cut_reason`). */
export type QuotaRefusal = 'insufficient_balance' | 'spend_limit_month' | 'spend_limit_day' | 'budget_exceeded';

export type QuotaStepDecision =
  | { outcome: 'granted' }
  | { outcome: 'refused'; code: QuotaRefusal; refusedLimit?: string }
  | { outcome: 'needs_room'; leaseNeed: Usd; budgetNeed: { keyId: string; amount: Usd } | null };

/** One step of a call in flight: what its hold grows by, on the lease and (developer_key) on the key's budget lease. */
export interface QuotaStepAsk {
  leaseGrowth: Usd;
  budgetGrowth: { keyId: string; amount: Usd } | null;
  /** The latest the call may still run (epoch ms): what a lease must outlive. */
  runsUntil: number;
}

/**
 * A step is decided as a call's hold is (decide-call.ts), on the room the object holds with the call
 * at its current grant: granted when the lease (and the key's budget lease) cover the growth;
 * otherwise one renewal, after which what is still short is refused naming the key's budget, the
 * spend limit or the balance. No rate slot or request-id claim: the call already holds both.
 */
export function decideQuotaStep(ask: QuotaStepAsk, room: CallRoom): QuotaStepDecision {
  const { leaseGrowth, budgetGrowth, runsUntil } = ask;
  const budgetCovered = budgetGrowth === null || budgetFit(room, budgetGrowth.keyId, budgetGrowth.amount, runsUntil) === 'covered';
  const leaseCovered = leaseHolds(room, leaseGrowth, runsUntil);
  if (!room.renewed) {
    if (room.recalling || !leaseCovered || !budgetCovered)
      return { outcome: 'needs_room', leaseNeed: leaseGrowth, budgetNeed: budgetGrowth };
    return { outcome: 'granted' };
  }
  if (!budgetCovered) return { outcome: 'refused', code: 'budget_exceeded' };
  if (!leaseCovered) {
    const limit = refusingLimit(room, leaseGrowth);
    return limit === null
      ? { outcome: 'refused', code: 'insufficient_balance' }
      : { outcome: 'refused', code: `spend_limit_${limit.period}`, refusedLimit: limit.limitUsd };
  }
  return { outcome: 'granted' };
}
