/**
 * A call answered through the metered stream: streamed to a client that asked for a stream, or, for
 * a call held for a quota that grows with the answer, read from its upstream as a stream and answered
 * whole (buffered; docs/quota.md). The metered stream counts, asks for quota steps, cuts and settles
 * the same way for both.
 */
import { FaucetError } from '#shared/wire/errors.ts';
import type { CallOutcome } from '#shared/calls/call-log.ts';
import { abandonCall, settleCall } from '../metering/settle-call.ts';
import { callQuota } from '../streaming/call-quota.ts';
import { meteredStream } from '../streaming/metered-stream.ts';
import { bufferedAnswer } from '../streaming/buffered-answer.ts';
import { AttemptsFailed, tryCandidates, type Answered } from '../fallback/try-candidates.ts';
import type { ChatCompletionChunk } from '../openai/chat-schemas.ts';
import {
  attemptContext,
  attemptPlan,
  type Call,
  endUnanswered,
  logFacts,
  nativeOf,
  tenths,
  unreportedBounds,
  withAttempts,
} from './authorized-call.ts';

/** The client asked for a stream: the metered stream in the surface's words. */
export async function streamCall(call: Call): Promise<Response> {
  const stream = await meteredAnswer(call, { includeUsage: call.read.includeUsage });
  const { requestId, plan } = call;
  return call.surface.stream(call.c, stream, call.read, call.ids, { 'x-request-id': requestId, 'x-faucet-call-id': plan.keys.callId });
}

/**
 * Whether a call not streamed is read from its upstream as a stream: when it is held for a quota that
 * may have to grow (its output can be counted as it arrives, and its first grant is less than its
 * whole bound within the feature's cap; not on the byok route, whose hold does not grow with tokens).
 * A call whose first grant already covers its whole output is held for it and answered whole.
 */
export function buffersStream(call: Call): boolean {
  const { held, plan } = call;
  const cap = plan.maxOutputTokens ?? Number.POSITIVE_INFINITY;
  const grows = Math.min(held.worstCaseOutputTokens, cap) < Math.min(held.wholeOutputTokens, cap);
  return !call.read.stream && held.cuttable && grows && plan.routeMode !== 'byok';
}

/**
 * A call not streamed, held for a quota: the metered stream gathered into one completion. It runs
 * under `waitUntil`, as a completion does: a client that goes away mid-call leaves it read to its end
 * and booked.
 */
export async function bufferedCall(call: Call): Promise<Response> {
  const work = (async () => {
    const upstreamStarted = performance.now();
    let settleStarted: number | undefined;
    const metered = await meteredAnswer(call, {
      includeUsage: true,
      buffered: true,
      settling: () => {
        settleStarted = performance.now();
      },
    });
    const { completion, faucet } = await bufferedAnswer(metered);
    const settledAt = settleStarted ?? performance.now();
    const timing = [
      `authorize;dur=${tenths(call.authorizeMs)}`,
      `upstream;dur=${tenths(settledAt - upstreamStarted)}`,
      `settle;dur=${tenths(performance.now() - settledAt)}`,
    ];
    return call.surface.answer(call.c, { ...completion, faucet }, call.read, call.ids, { 'server-timing': timing.join(', ') });
  })();
  call.defer(work.catch(() => undefined));
  return work;
}

/** Tries the candidates for a stream, then meters it; the call's database handle is released once it is settled. */
async function meteredAnswer(
  call: Call,
  how: { includeUsage: boolean; buffered?: boolean; settling?: () => void },
): Promise<ReadableStream<Uint8Array>> {
  const { c, requestId, plan } = call;
  const upstream = new AbortController();
  const started = Date.now();
  let answered: Answered<AsyncIterable<ChatCompletionChunk>>;
  try {
    // An attempt is final once its upstream accepted the stream: what it sends is forwarded as it comes, never retried.
    answered = await tryCandidates(attemptContext(call, upstream.signal), call.candidates, (adapter, credential, attemptId, candidate) =>
      adapter.stream({ request: candidate.request, credential, callId: attemptId, signal: upstream.signal, ...nativeOf(call) }),
    );
  } catch (error) {
    const failed = error instanceof AttemptsFailed ? error : new AttemptsFailed(error, [], call.candidates[0] ?? null);
    await endUnanswered(call, failed, upstream.signal).finally(call.release);
    throw failed.error;
  }
  const answeringPlan = attemptPlan(call, answered);
  const firstByteMs = performance.now() - call.startedAt;
  const streamLog = (outcome: CallOutcome, failure?: unknown) =>
    logFacts(call, outcome, { attempts: answered.attempts, answeredBy: answered.candidate, firstByteMs, failure });
  return meteredStream({
    chunks: answered.value,
    includeUsage: how.includeUsage,
    buffered: how.buffered,
    bounds: unreportedBounds(call, answered.candidate),
    requestId,
    deadlineMs: Math.max(0, call.limits.maxDurationSeconds * 1000 - (Date.now() - started)),
    drainMs: call.limits.drainMs,
    settle: (usage, ending, failure) => {
      how.settling?.();
      return settleCall(
        answeringPlan,
        answered.candidate.reference,
        usage,
        call.settling,
        streamLog(ending === 'completed' ? 'answered' : ending === 'cut' ? 'cut' : 'upstream_error', failure),
      )
        .then((faucet) => withAttempts(call, faucet, answered.attempts))
        .finally(call.release);
    },
    abandon: (failure) => abandonCall(plan, streamLog('upstream_error', failure)).finally(call.release),
    stopUpstream: () => upstream.abort(),
    ...callQuota(c.env, plan, answered.candidate, call.settling.catalog),
    defer: call.defer,
    onSettleFailure: (error) =>
      c.var.logger?.error('stream settlement failed', {
        request_id: requestId,
        code: FaucetError.isInstance(error) ? error.code : 'internal_error',
      }),
  });
}
