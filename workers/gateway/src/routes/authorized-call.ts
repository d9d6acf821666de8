/**
 * An authorized call: what the pipeline of a model call (chat-call.ts) knows of a call once its wallet
 * object has authorized it, and what its ways of answering (whole, or through the metered stream:
 * metered-call.ts) share — the attempt context, the settlement, the request log facts.
 */
import type { Context } from 'hono';
import type { AppEnv } from '#shared/app-env.ts';
import type { CallLimits } from '#shared/calls/call-limits.ts';
import { failureFacts, type CallLogFacts, type CallOutcome } from '#shared/calls/call-log.ts';
import type { SqlDatabase } from '#shared/query.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import type { CallAttempt } from '#shared/wire/faucet-object.ts';
import type { FaucetObject } from '../metering/faucet-object.ts';
import type { HoldBounds } from '../metering/hold-bounds.ts';
import { estimatedUsage } from '../metering/metered-usage.ts';
import { abandonCall, settleCall, type SettleOptions } from '../metering/settle-call.ts';
import type { CallPlan } from '../routing/call-plan.ts';
import type { Candidate } from '../fallback/hold-candidates.ts';
import type { AttemptContext, AttemptsFailed } from '../fallback/try-candidates.ts';
import type { AnswerIds, ChatSurface, SurfaceCall } from './chat-surface.ts';

export interface Call {
  surface: ChatSurface;
  read: SurfaceCall;
  ids: AnswerIds;
  c: Context<AppEnv>;
  /** Milliseconds of the authorize statement (incl. opening the connection), for `server-timing`. */
  authorizeMs: number;
  /** `performance.now()` when the call started (the request log's total). */
  startedAt: number;
  requestId: string;
  database: SqlDatabase;
  /** Releases the request's database handle (retained past the response for settlement). */
  release(): void;
  plan: CallPlan;
  /** The model asked for (or its alias's target), then the feature's fallbacks. */
  candidates: Candidate[];
  /** What the statement held for (the largest bounds over the candidates). */
  held: HoldBounds;
  /** Whether the faucet object lists the attempts: the feature has fallbacks or the model was an alias. */
  listAttempts: boolean;
  limits: CallLimits;
  adapterFor: AttemptContext['adapterFor'];
  /** How the call is settled: the price catalog it is rated with, and whether a leased settlement may follow the answer. */
  settling: SettleOptions;
  defer(work: Promise<unknown>): void;
}

export function attemptContext(call: Call, signal: AbortSignal): AttemptContext {
  return {
    env: call.c.env,
    database: call.database,
    plan: call.plan,
    primaryProvider: call.candidates[0]?.reference.provider ?? '',
    held: call.held,
    adapterFor: call.adapterFor,
    signal,
    deadlineAt: Date.now() + call.limits.maxDurationSeconds * 1000,
  };
}

/** The Responses request an adapter sends natively where its upstream serves that API (providers/provider.ts). */
export function nativeOf(call: Call): { responses?: Record<string, unknown> } {
  return call.read.responses === undefined ? {} : { responses: call.read.responses };
}

/** The plan the answering attempt is booked with: its own key (a fallback's on the byok route). */
export function attemptPlan(call: Call, answered: { credentialId: string | null }): CallPlan {
  return { ...call.plan, providerCredentialId: answered.credentialId };
}

/** A candidate's worst case in tokens, within the feature's cap: what its unreported usage is billed at. */
export function unreportedBounds(call: Call, candidate: Candidate): { inputTokens: number; outputTokens: number } {
  const bounds = candidate.bounds ?? call.held;
  const cap = call.plan.maxOutputTokens ?? bounds.worstCaseOutputTokens;
  return { inputTokens: bounds.worstCaseInputTokens, outputTokens: Math.min(bounds.worstCaseOutputTokens, cap) };
}

export function withAttempts(call: Call, faucet: FaucetObject, attempts: CallAttempt[]): FaucetObject {
  return call.listAttempts ? { ...faucet, attempts } : faucet;
}

/**
 * No attempt gave an answer the gateway could use. A refusal (an HTTP error status) or a
 * connection that never opened means the provider bills nothing: the call is abandoned and its
 * request id freed. A timeout of the last attempt (or the call's deadline) means the provider had
 * the request and may be generating: the call is booked at that attempt's bound, marked estimated,
 * so the platform never pays for an unbilled call (docs/money.md, "The guarantee").
 */
export async function endUnanswered(call: Call, failed: AttemptsFailed, signal: AbortSignal): Promise<void> {
  const { error, lastTried } = failed;
  const timedOut = (FaucetError.isInstance(error) && error.code === 'upstream_timeout') || signal.aborted;
  const log = logFacts(call, 'upstream_error', { attempts: failed.attempts, answeredBy: lastTried, firstByteMs: null, failure: error });
  if (!timedOut || lastTried === null) {
    await abandonCall(call.plan, log);
    return;
  }
  const bounds = unreportedBounds(call, lastTried);
  const unanswered = estimatedUsage(bounds.inputTokens, bounds.outputTokens);
  await settleCall(call.plan, lastTried.reference, unanswered, call.settling, log).catch((settleError: unknown) => {
    // Left in flight: the sweeper books it at the same bound after its deadline.
    call.c.var.logger?.error('booking an unanswered call failed', {
      code: FaucetError.isInstance(settleError) ? settleError.code : 'internal_error',
    });
  });
}

/** How the call went, for the developer's request log: never what was said. */
export function logFacts(
  call: Call,
  outcome: CallOutcome,
  how: { attempts: CallAttempt[]; answeredBy: Candidate | null; firstByteMs: number | null; failure?: unknown },
): CallLogFacts {
  return {
    surface: call.surface.name,
    requestedModel: call.read.model,
    outcome,
    ...failureFacts(how.failure),
    stream: call.read.stream,
    authorizeMs: call.authorizeMs,
    firstByteMs: how.firstByteMs,
    totalMs: performance.now() - call.startedAt,
    attempts: call.listAttempts ? how.attempts : null,
    provider: how.answeredBy?.reference.provider ?? null,
    model: how.answeredBy?.reference.model ?? null,
  };
}

/** Milliseconds to one decimal, for `server-timing`. */
export function tenths(milliseconds: number): string {
  return String(Math.round(milliseconds * 10) / 10);
}
