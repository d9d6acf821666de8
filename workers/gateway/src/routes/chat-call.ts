/**
 * The one pipeline of a model call, whatever API the client speaks (chat completions, Responses,
 * Anthropic Messages: a `ChatSurface` reads its body into a chat request and writes the answer in its
 * own words): authorize by the end user's wallet object (session, feature, route, idempotency claim,
 * hold), call the provider through its adapter, then settle with the object and answer with the
 * completion plus its `faucet` object, or stream it through the metered stream. The call's money key
 * is the server's (`call:<uuid>`); the client's x-request-id is only echoed and used as an
 * idempotency key. The call's model may be an alias of its feature, and the feature's fallbacks are
 * tried when an attempt fails before its first byte (fallback/: the hold covers them all; only the
 * attempt that answered is booked, at its model's prices).
 */
import { settlementGraceMs } from '#shared/durable-objects.ts';
import type { Context } from 'hono';
import type { AppEnv } from '#shared/app-env.ts';
import { callLimits } from '#shared/calls/call-limits.ts';
import { intSetting } from '#shared/env.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { waitUntil } from '#shared/wait-until.ts';
import type { SqlDatabase } from '#shared/query.ts';
import type { CloudRouteMode } from '#shared/wire/route-modes.ts';
import { defaultUpstreamTimeoutMs } from '#shared/upstream/outbound-fetch.ts';
import type { GatewayDependencies } from '../gateway-dependencies.ts';
import { meteredUsage } from '../metering/metered-usage.ts';
import { holdBounds } from '../metering/hold-bounds.ts';
import { capOutputTokens } from '../metering/output-cap.ts';
import { settleCall } from '../metering/settle-call.ts';
import { createAdapter } from '../providers/create-adapter.ts';
import { authorizeOnLease, walletOf } from '../wallet/authorize-on-lease.ts';
import { candidateOf, sentRequest, type Candidate } from '../fallback/hold-candidates.ts';
import { AttemptsFailed, tryCandidates, type Answered } from '../fallback/try-candidates.ts';
import { authorizeWithRouting, callKeysOf, sessionOf } from './call-start.ts';
import type { ChatSurface, SurfaceCall } from './chat-surface.ts';
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
import { bufferedCall, buffersStream, streamCall } from './metered-call.ts';

/** Serves one model call of `surface`: the handler of each model route. */
export async function serveChatCall(c: Context<AppEnv>, dependencies: GatewayDependencies, surface: ChatSurface): Promise<Response> {
  const requestId = c.var.requestId;
  const token = surface.token(c);
  const { tokenHash, refusedForBody } = await sessionOf(c, token);
  const read = await surface.read(c).then(cloudCall).catch(refusedForBody);
  const { body, request, feature } = read;
  const requestedRoute = read.requestedRoute as CloudRouteMode | undefined;
  const limits = callLimits(c.env);
  const keys = await callKeysOf(requestId, body, limits);
  const { callId } = keys;

  const defer = (work: Promise<unknown>) => waitUntil(c, work);
  const handle = c.var.database();
  const release = handle.retain();
  // Opened by the first statement: a call its wallet's lease covers runs none.
  const database: SqlDatabase = { execute: (query) => handle.db.execute(query) };
  const authorizeStarted = performance.now();
  let authorized: Awaited<ReturnType<typeof authorizeWithRouting<Candidate>>>;
  try {
    authorized = await authorizeWithRouting<Candidate>(
      {
        tokenHash,
        feature,
        model: read.model,
        // The primary's bounds or the body's refusal; a fallback the gateway cannot bound is never tried.
        candidateOf: (reference, primary) => {
          if (!primary) return candidateOf(c.env, reference, request, dependencies.priceCatalog);
          const sent = sentRequest(reference, request);
          return { reference, request: sent, bounds: holdBounds(c.env, reference, sent, dependencies.priceCatalog) };
        },
        refusedForBody,
      },
      async ({ candidates, ...input }) => {
        const authorizeInput = { tokenHash, featureKey: feature, call: keys, requestedRoute, ...input };
        // The token names its wallet: that wallet's object decides the call on its lease.
        const log = { surface: surface.name, requestedModel: read.model, stream: read.stream };
        return authorizeOnLease(c.env, walletOf(c.env, token), { ...authorizeInput, candidates, log });
      },
    );
  } catch (error) {
    release();
    throw error;
  }
  const { plan, candidates, held, alias } = authorized;

  const context = {
    fetch: dependencies.upstreamFetch,
    upstreamTimeoutMs: intSetting(c.env.UPSTREAM_TIMEOUT_MS, defaultUpstreamTimeoutMs),
    mockLatencyMs: intSetting(c.env.MOCK_PROVIDER_LATENCY_MS, 0),
    priceCatalog: dependencies.priceCatalog,
  };
  const call: Call = {
    surface,
    read,
    ids: { callId, requestId, createdAt: Math.floor(Date.now() / 1000) },
    c,
    authorizeMs: performance.now() - authorizeStarted,
    startedAt: authorizeStarted,
    requestId,
    database,
    release,
    plan,
    // The feature's output cap bounds what is sent and what an unreported usage is billed at.
    candidates: candidates.map((candidate) => ({ ...candidate, request: capOutputTokens(candidate.request, plan.maxOutputTokens) })),
    held,
    listAttempts: candidates.length > 1 || alias !== null,
    limits,
    adapterFor: (candidate) => createAdapter(candidate.reference.entry, context),
    settling: {
      catalog: dependencies.priceCatalog,
      // Write-through (a flush interval of 0) books before the answer, so the answer waits for it.
      // Otherwise the settlement is sent once the answer has left (docs/edge.md, "What a call waits on").
      background:
        intSetting(c.env.WALLET_FLUSH_INTERVAL_MS, 1000) === 0
          ? undefined
          : (send) =>
              defer(
                afterTheAnswer()
                  .then(send)
                  .catch((error: unknown) =>
                    c.var.logger?.error('leased settlement not delivered; the wallet object books the call at its bound', {
                      call_id: callId,
                      error: (error as Error).name,
                    }),
                  ),
              ),
    },
    defer,
  };
  c.header('x-faucet-call-id', callId);
  if (read.stream) return streamCall(call);
  return buffersStream(call) ? bufferedCall(call) : completeCall(call);
}

/**
 * Resolves `settlementGraceMs` after the turn of the event loop that returns the answer, so the
 * runtime writes the answer first (a message to the wallet object sent in the answer's own turn had
 * the object take it on the isolate's thread before the answer was written: about 1 ms of a call in
 * workerd, docs/edge.md), and a busy wallet's next call can carry the settlement.
 */
function afterTheAnswer(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, settlementGraceMs));
}

/** `route_mode: "local"` runs on the user's machine: refused here, whatever the surface. */
function cloudCall(read: SurfaceCall): SurfaceCall {
  if (read.requestedRoute === 'local') {
    throw new FaucetError(
      'invalid_request',
      'route_mode "local" is not served by the cloud gateway: local calls go to the Faucet bridge on the user\'s machine.',
    );
  }
  return read;
}

async function completeCall(call: Call): Promise<Response> {
  // The upstream call and its settlement run under `waitUntil`: a client that goes away mid-call
  // must not leave an answered call unbooked or its hold blocking the balance until it expires.
  const work = upstreamAndSettle(call);
  call.defer(work.catch(() => undefined));
  return work;
}

async function upstreamAndSettle(call: Call): Promise<Response> {
  const { c } = call;
  try {
    const upstreamStarted = performance.now();
    // The gateway ends the call at its deadline, so its hold (which outlives the deadline) is never gone before it is booked.
    const signal = AbortSignal.timeout(call.limits.maxDurationSeconds * 1000);
    let answered: Answered<Awaited<ReturnType<ReturnType<Call['adapterFor']>['complete']>>>;
    try {
      answered = await tryCandidates(attemptContext(call, signal), call.candidates, (adapter, credential, attemptId, candidate) =>
        adapter.complete({ request: candidate.request, credential, callId: attemptId, signal, ...nativeOf(call) }),
      );
    } catch (error) {
      const failed = error instanceof AttemptsFailed ? error : new AttemptsFailed(error, [], call.candidates[0] ?? null);
      await endUnanswered(call, failed, signal);
      // The gateway's own deadline reads as a timeout, not as a failure of the upstream.
      throw signal.aborted
        ? new FaucetError('upstream_timeout', 'The call reached its longest allowed duration and was ended.')
        : failed.error;
    }
    const completion = answered.value;
    const bounds = unreportedBounds(call, answered.candidate);
    // Without the provider's count: upper bounds (the hold's input bound; the answer's UTF-8 bytes).
    const usage = meteredUsage(completion.usage, () => ({
      inputTokens: bounds.inputTokens,
      outputTokens: Math.min(
        bounds.outputTokens,
        utf8Bytes(
          completion.choices
            .map(
              ({ message }) =>
                (message.content ?? '') +
                (message.reasoning_content ?? '') +
                (message.tool_calls ? JSON.stringify(message.tool_calls) : '') +
                (message.thinking_blocks ? JSON.stringify(message.thinking_blocks) : ''),
            )
            .join(''),
        ),
      ),
    }));
    const settleStarted = performance.now();
    const upstreamMs = performance.now() - upstreamStarted;
    const log = logFacts(call, 'answered', { attempts: answered.attempts, answeredBy: answered.candidate, firstByteMs: null });
    const faucet = withAttempts(
      call,
      await settleCall(attemptPlan(call, answered), answered.candidate.reference, usage, call.settling, log),
      answered.attempts,
    );
    const timing = [
      `authorize;dur=${tenths(call.authorizeMs)}`,
      `upstream;dur=${tenths(upstreamMs)}`,
      `settle;dur=${tenths(performance.now() - settleStarted)}`,
    ];
    return call.surface.answer(c, { ...completion, faucet }, call.read, call.ids, { 'server-timing': timing.join(', ') });
  } finally {
    call.release();
  }
}

const encoder = new TextEncoder();
function utf8Bytes(text: string): number {
  return encoder.encode(text).byteLength;
}
