/**
 * `POST /v1/chat/completions`: authorize (session, feature, route, idempotency claim, call record,
 * hold — one statement), call the provider through its adapter, then settle (one statement) and
 * answer with the completion plus its `faucet` object, or stream it. The call's money key is the
 * server's (`call:<uuid>`); the client's x-request-id is only echoed and used as an idempotency key.
 * The call's model may be an alias of its feature, and the feature's fallbacks are tried when an
 * attempt fails before its first byte (fallback/: the hold covers them all; only the attempt that
 * answered is booked, at its model's prices).
 */
import type { Context } from 'hono';
import type { AppEnv } from '#shared/app-env.ts';
import type { ServiceApp } from '#shared/app.ts';
import { bearerToken } from '#shared/auth/bearer.ts';
import { findLiveSession, hashSessionToken } from '#shared/auth/require-session.ts';
import { callLimits, type CallLimits } from '#shared/calls/call-limits.ts';
import { sha256Hex } from '#shared/crypto.ts';
import { intSetting } from '#shared/env.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { waitUntil } from '#shared/wait-until.ts';
import { describeZodError } from '#shared/render-error.ts';
import type { SqlDatabase } from '#shared/query.ts';
import type { PriceCatalog } from '#shared/rating/index.ts';
import type { GatewayDependencies } from '../gateway-dependencies.ts';
import { estimatedUsage, meteredUsage } from '../metering/metered-usage.ts';
import { holdBounds } from '../metering/hold-bounds.ts';
import { capOutputTokens } from '../metering/output-cap.ts';
import { abandonCall, settleCall, type SettleOptions } from '../metering/settle-call.ts';
import type { ChatRequest } from '../openai/chat-schemas.ts';
import { createAdapter } from '../providers/create-adapter.ts';
import { authorizeOnLease, walletOf } from '../wallet/authorize-on-lease.ts';
import { authorizeCall, RoutingChanged, type CallKeys, type CallPlan } from '../routing/authorize-call.ts';
import { parseModel } from '../routing/parse-model.ts';
import { resolveCandidates, routingCache, type FeatureRouting } from '../fallback/feature-routing.ts';
import { candidateOf, combinedBounds, type Candidate } from '../fallback/hold-candidates.ts';
import { AttemptsFailed, tryCandidates, type Answered, type AttemptContext } from '../fallback/try-candidates.ts';
import type { HoldBounds } from '../metering/hold-bounds.ts';
import type { CallAttempt } from '#shared/wire/faucet-object.ts';
import type { FaucetObject } from '../metering/faucet-object.ts';
import { sseHeaders } from '#shared/wire/format-sse.ts';
import { meteredStream } from '../streaming/metered-stream.ts';
import { defaultUpstreamTimeoutMs } from '#shared/upstream/outbound-fetch.ts';
import { chatCompletionsBodySchema, type ChatCompletionsBody } from './chat-completions-body.ts';

interface Call {
  c: Context<AppEnv>;
  /** Milliseconds of the authorize statement (incl. opening the connection), for `server-timing`. */
  authorizeMs: number;
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

export function registerChatCompletions(app: ServiceApp, dependencies: GatewayDependencies): void {
  app.post('/v1/chat/completions', async (c) => {
    const requestId = c.var.requestId;
    // Credentials before the body: a request without a well-formed token learns nothing about its body.
    const token = bearerToken(c);
    const tokenHash = await hashSessionToken(token);
    if (tokenHash === undefined) throw new FaucetError('unauthorized', 'Invalid session token');
    // A request the gateway refuses for its body (schema, model, fields, bounds) is answered 400 only
    // for a live session: 401 whatever the body otherwise. The live-session check runs on that error
    // path alone (the valid path checks the session inside the one authorize statement).
    const refusedForBody = async (error: unknown): Promise<never> => {
      if (!(await findLiveSession(c.var.database().db, tokenHash))) throw new FaucetError('unauthorized', 'Session is unknown or expired');
      throw error;
    };
    const { body, requestedRoute, request } = await readCall(c).catch(refusedForBody);
    const { feature } = body;
    const limits = callLimits(c.env);
    const callId = crypto.randomUUID();
    const keys: CallKeys = {
      callId,
      moneyKey: `call:${callId}`,
      clientRequestId: requestId,
      fingerprint: await sha256Hex(JSON.stringify(body)),
      holdTtlSeconds: limits.holdTtlSeconds,
      maxDurationSeconds: limits.maxDurationSeconds,
    };

    const defer = (work: Promise<unknown>) => waitUntil(c, work);
    const handle = c.var.database();
    const release = handle.retain();
    // Opened by the first statement: a call its wallet's lease covers runs none.
    const database: SqlDatabase = { execute: (query) => handle.db.execute(query) };
    const authorizeStarted = performance.now();
    let authorized: Awaited<ReturnType<typeof authorizeWithRouting>>;
    try {
      authorized = await authorizeWithRouting(
        c,
        { tokenHash, feature, model: body.model, request, refusedForBody, catalog: dependencies.priceCatalog },
        async ({ candidates, ...input }) => {
          const authorizeInput = { tokenHash, featureKey: feature, call: keys, requestedRoute, ...input };
          // A token naming its wallet: that wallet's object decides on its lease, or says the per-call path must.
          const wallet = walletOf(c.env, token);
          const leased = wallet === null ? null : await authorizeOnLease(c.env, wallet, { ...authorizeInput, candidates });
          return leased ?? authorizeCall(database, c.env, authorizeInput);
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
      c,
      authorizeMs: performance.now() - authorizeStarted,
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
    return body.stream === true ? streamCall(call, body) : completeCall(call);
  });
}

/**
 * Authorizes with the candidates the feature's routing gives (fallback/feature-routing.ts): with what
 * this isolate last saw of it, and once more with the feature's own when the statement says it
 * changed. The hold is sized over every candidate (fallback/hold-candidates.ts).
 */
async function authorizeWithRouting(
  c: Context<AppEnv>,
  input: {
    tokenHash: string;
    feature: string | undefined;
    model: string;
    request: ChatRequest;
    refusedForBody(error: unknown): Promise<never>;
    catalog: PriceCatalog;
  },
  authorize: (
    input: Pick<Parameters<typeof authorizeCall>[2], 'reference' | 'bounds' | 'routing'> & { candidates: Candidate[] },
  ) => Promise<CallPlan>,
) {
  let routing: FeatureRouting | null = routingCache.get(input.tokenHash, input.feature);
  for (let round = 0; ; round += 1) {
    let resolved: ReturnType<typeof resolveCandidates>;
    try {
      resolved = resolveCandidates(input.model, routing);
    } catch (error) {
      return input.refusedForBody(error);
    }
    // An alias not known yet: asked with a stand-in the statement answers `routing_changed` to (or,
    // if the alias names exactly it, authorizes: its bounds are then the right ones).
    const primaryReference = resolved.primary ?? parseModel('mock:echo');
    const primaryRequest = { ...input.request, model: primaryReference.model };
    let bounds: HoldBounds;
    try {
      bounds = holdBounds(c.env, primaryReference, primaryRequest, input.catalog);
    } catch (error) {
      return input.refusedForBody(error);
    }
    const primary = { reference: primaryReference, request: primaryRequest, bounds };
    const fallbacks = resolved.fallbacks.map((reference) => candidateOf(c.env, reference, input.request, input.catalog));
    const held = combinedBounds(primary, fallbacks);
    try {
      const plan = await authorize({
        reference: primaryReference,
        bounds: held,
        routing: { alias: resolved.alias, fallbacks: resolved.fallbackNames },
        candidates: [primary, ...fallbacks],
      });
      routingCache.set(input.tokenHash, input.feature, plan.routing);
      return { plan, candidates: [primary, ...fallbacks], held, alias: resolved.alias };
    } catch (error) {
      if (!(error instanceof RoutingChanged) || round >= 2) throw error;
      routing = error.routing;
      routingCache.set(input.tokenHash, input.feature, routing);
    }
  }
}

/**
 * Resolves in a later turn of the event loop than the one that returns the answer, so the runtime
 * writes the answer first. A message to the wallet object sent in the answer's own turn had the
 * object take it (and write it to its storage) on the isolate's thread before the answer was
 * written: about 1 ms of a call in workerd (docs/edge.md).
 */
function afterTheAnswer(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** Everything the gateway reads from the body before it authorizes: the parsed body, the route asked for, the request sent upstream (its model set per candidate). */
async function readCall(c: Context<AppEnv>) {
  const body = await readBody(c);
  const requestedRoute = body.route_mode;
  if (requestedRoute === 'local') {
    throw new FaucetError(
      'invalid_request',
      'route_mode "local" is not served by the cloud gateway: local calls go to the Faucet bridge on the user\'s machine.',
    );
  }
  const { feature: _feature, route_mode: _route, model, ...openAiFields } = body;
  const request: ChatRequest = { ...openAiFields, model };
  return { body, requestedRoute, request };
}

async function readBody(c: Context<AppEnv>): Promise<ChatCompletionsBody> {
  let json: unknown;
  try {
    json = await c.req.json();
  } catch {
    throw new FaucetError('invalid_request', 'The request body must be a JSON object.');
  }
  const parsed = chatCompletionsBodySchema.safeParse(json);
  if (!parsed.success) throw new FaucetError('invalid_request', describeZodError(parsed.error));
  return parsed.data;
}

async function completeCall(call: Call): Promise<Response> {
  // The upstream call and its settlement run under `waitUntil`: a client that goes away mid-call
  // must not leave an answered call unbooked or its hold blocking the balance until it expires.
  const work = upstreamAndSettle(call);
  call.defer(work.catch(() => undefined));
  return work;
}

async function upstreamAndSettle(call: Call): Promise<Response> {
  const { c, database } = call;
  try {
    const upstreamStarted = performance.now();
    // The gateway ends the call at its deadline, so its hold (which outlives the deadline) is never gone before it is booked.
    const signal = AbortSignal.timeout(call.limits.maxDurationSeconds * 1000);
    let answered: Answered<Awaited<ReturnType<ReturnType<Call['adapterFor']>['complete']>>>;
    try {
      answered = await tryCandidates(attemptContext(call, signal), call.candidates, (adapter, credential, attemptId, candidate) =>
        adapter.complete({ request: candidate.request, credential, callId: attemptId, signal }),
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
            .map((choice) => (choice.message.content ?? '') + (choice.message.tool_calls ? JSON.stringify(choice.message.tool_calls) : ''))
            .join(''),
        ),
      ),
    }));
    const settleStarted = performance.now();
    const faucet = withAttempts(
      call,
      await settleCall(database, attemptPlan(call, answered), answered.candidate.reference, usage, call.settling),
      answered.attempts,
    );
    const timing = [
      `authorize;dur=${tenths(call.authorizeMs)}`,
      `upstream;dur=${tenths(settleStarted - upstreamStarted)}`,
      `settle;dur=${tenths(performance.now() - settleStarted)}`,
    ];
    return c.json({ ...completion, faucet }, 200, { 'server-timing': timing.join(', ') });
  } finally {
    call.release();
  }
}

async function streamCall(call: Call, body: ChatCompletionsBody): Promise<Response> {
  const { c, requestId, database, plan } = call;
  const upstream = new AbortController();
  const started = Date.now();
  let answered: Answered<Awaited<ReturnType<ReturnType<Call['adapterFor']>['stream']>>>;
  try {
    // An attempt is final once its upstream accepted the stream: what it sends is forwarded as it comes, never retried.
    answered = await tryCandidates(attemptContext(call, upstream.signal), call.candidates, (adapter, credential, attemptId, candidate) =>
      adapter.stream({ request: candidate.request, credential, callId: attemptId, signal: upstream.signal }),
    );
  } catch (error) {
    const failed = error instanceof AttemptsFailed ? error : new AttemptsFailed(error, [], call.candidates[0] ?? null);
    await endUnanswered(call, failed, upstream.signal).finally(call.release);
    throw failed.error;
  }
  const answeringPlan = attemptPlan(call, answered);
  const stream = meteredStream({
    chunks: answered.value,
    includeUsage: body.stream_options?.include_usage === true,
    bounds: unreportedBounds(call, answered.candidate),
    requestId,
    deadlineMs: Math.max(0, call.limits.maxDurationSeconds * 1000 - (Date.now() - started)),
    drainMs: call.limits.drainMs,
    settle: (usage) =>
      settleCall(database, answeringPlan, answered.candidate.reference, usage, call.settling)
        .then((faucet) => withAttempts(call, faucet, answered.attempts))
        .finally(call.release),
    abandon: () => abandonCall(database, plan).finally(call.release),
    stopUpstream: () => upstream.abort(),
    defer: call.defer,
    onSettleFailure: (error) =>
      c.var.logger?.error('stream settlement failed', {
        request_id: requestId,
        code: FaucetError.isInstance(error) ? error.code : 'internal_error',
      }),
  });
  return new Response(stream, { status: 200, headers: { ...sseHeaders, 'x-request-id': requestId, 'x-faucet-call-id': plan.keys.callId } });
}

function attemptContext(call: Call, signal: AbortSignal): AttemptContext {
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

/** The plan the answering attempt is booked with: its own key (a fallback's on the byok route). */
function attemptPlan(call: Call, answered: { credentialId: string | null }): CallPlan {
  return { ...call.plan, providerCredentialId: answered.credentialId };
}

/** A candidate's worst case in tokens, within the feature's cap: what its unreported usage is billed at. */
function unreportedBounds(call: Call, candidate: Candidate): { inputTokens: number; outputTokens: number } {
  const bounds = candidate.bounds ?? call.held;
  const cap = call.plan.maxOutputTokens ?? bounds.worstCaseOutputTokens;
  return { inputTokens: bounds.worstCaseInputTokens, outputTokens: Math.min(bounds.worstCaseOutputTokens, cap) };
}

function withAttempts(call: Call, faucet: FaucetObject, attempts: CallAttempt[]): FaucetObject {
  return call.listAttempts ? { ...faucet, attempts } : faucet;
}

/**
 * No attempt gave an answer the gateway could use. A refusal (an HTTP error status) or a
 * connection that never opened means the provider bills nothing: the call is abandoned and its
 * request id freed. A timeout of the last attempt (or the call's deadline) means the provider had
 * the request and may be generating: the call is booked at that attempt's bound, marked estimated,
 * so the platform never pays for an unbilled call (docs/money.md, "The guarantee").
 */
async function endUnanswered(call: Call, failed: AttemptsFailed, signal: AbortSignal): Promise<void> {
  const { error, lastTried } = failed;
  const timedOut = (FaucetError.isInstance(error) && error.code === 'upstream_timeout') || signal.aborted;
  if (!timedOut || lastTried === null) {
    await abandonCall(call.database, call.plan);
    return;
  }
  const bounds = unreportedBounds(call, lastTried);
  const unanswered = estimatedUsage(bounds.inputTokens, bounds.outputTokens);
  await settleCall(call.database, call.plan, lastTried.reference, unanswered, call.settling).catch((settleError: unknown) => {
    // Left in flight: the sweeper books it at the same bound after its deadline.
    call.c.var.logger?.error('booking an unanswered call failed', {
      code: FaucetError.isInstance(settleError) ? settleError.code : 'internal_error',
    });
  });
}

const encoder = new TextEncoder();
function utf8Bytes(text: string): number {
  return encoder.encode(text).byteLength;
}

/** Milliseconds to one decimal, for `server-timing`. */
function tenths(milliseconds: number): string {
  return String(Math.round(milliseconds * 10) / 10);
}
