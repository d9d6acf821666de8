/**
 * `POST /v1/chat/completions`: authorize (session, feature, route, idempotency claim, call record,
 * hold — one statement), call the provider through its adapter, then settle (one statement) and
 * answer with the completion plus its `faucet` object, or stream it. The call's money key is the
 * server's (`call:<uuid>`); the client's x-request-id is only echoed and used as an idempotency key.
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
import type { LedgerDatabase } from '#shared/ledger/database.ts';
import type { GatewayDependencies } from '../gateway-dependencies.ts';
import { estimatedUsage, meteredUsage } from '../metering/metered-usage.ts';
import { holdBounds } from '../metering/hold-bounds.ts';
import { capOutputTokens } from '../metering/output-cap.ts';
import { abandonCall, settleCall } from '../metering/settle-call.ts';
import type { ChatRequest } from '../openai/chat-schemas.ts';
import { createAdapter } from '../providers/create-adapter.ts';
import type { ProviderAdapter } from '../providers/provider.ts';
import { authorizeCall, type CallKeys, type CallPlan } from '../routing/authorize-call.ts';
import { parseModel, type ModelReference } from '../routing/parse-model.ts';
import { sseHeaders } from '#shared/wire/format-sse.ts';
import { meteredStream } from '../streaming/metered-stream.ts';
import { defaultUpstreamTimeoutMs } from '#shared/upstream/outbound-fetch.ts';
import { chatCompletionsBodySchema, type ChatCompletionsBody } from './chat-completions-body.ts';

interface Call {
  c: Context<AppEnv>;
  /** Milliseconds of the authorize statement (incl. opening the connection), for `server-timing`. */
  authorizeMs: number;
  requestId: string;
  database: LedgerDatabase;
  /** Releases the request's database handle (retained past the response for settlement). */
  release(): void;
  plan: CallPlan;
  reference: ModelReference;
  request: ChatRequest;
  adapter: ProviderAdapter;
  limits: CallLimits;
  /** The hold's worst case in tokens: what an unreported usage is billed at. */
  bounds: { inputTokens: number; outputTokens: number };
  defer(work: Promise<unknown>): void;
}

export function registerChatCompletions(app: ServiceApp, dependencies: GatewayDependencies): void {
  app.post('/v1/chat/completions', async (c) => {
    const requestId = c.var.requestId;
    // Credentials before the body: a request without a well-formed token learns nothing about its body.
    const tokenHash = await hashSessionToken(bearerToken(c));
    if (tokenHash === undefined) throw new FaucetError('unauthorized', 'Invalid session token');
    // A request the gateway refuses for its body (schema, model, fields, bounds) is answered 400 only
    // for a live session: 401 whatever the body otherwise. The live-session check runs on that error
    // path alone (the valid path checks the session inside the one authorize statement).
    const { body, requestedRoute, reference, request, bounds } = await readCall(c).catch(async (error: unknown) => {
      if (!(await findLiveSession(c.var.database().db, tokenHash))) throw new FaucetError('unauthorized', 'Session is unknown or expired');
      throw error;
    });
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
    const database = handle.db;
    const authorizeStarted = performance.now();
    let plan: CallPlan;
    try {
      plan = await authorizeCall(database, c.env, { tokenHash, featureKey: feature, call: keys, requestedRoute, reference, bounds });
    } catch (error) {
      release();
      throw error;
    }

    const adapter = createAdapter(reference.entry, {
      fetch: dependencies.upstreamFetch,
      upstreamTimeoutMs: intSetting(c.env.UPSTREAM_TIMEOUT_MS, defaultUpstreamTimeoutMs),
      mockLatencyMs: intSetting(c.env.MOCK_PROVIDER_LATENCY_MS, 0),
    });
    const call: Call = {
      c,
      authorizeMs: performance.now() - authorizeStarted,
      requestId,
      database,
      release,
      plan,
      reference,
      // The feature's output cap bounds what is sent and what an unreported usage is billed at.
      request: capOutputTokens(request, plan.maxOutputTokens),
      adapter,
      limits,
      bounds: {
        inputTokens: bounds.worstCaseInputTokens,
        outputTokens: Math.min(bounds.worstCaseOutputTokens, plan.maxOutputTokens ?? bounds.worstCaseOutputTokens),
      },
      defer,
    };
    c.header('x-faucet-call-id', callId);
    return body.stream === true ? streamCall(call, body) : completeCall(call);
  });
}

/** Everything the gateway reads from the body before it authorizes: the parsed body, the model, the request sent upstream and its bounds. */
async function readCall(c: Context<AppEnv>) {
  const body = await readBody(c);
  const requestedRoute = body.route_mode;
  if (requestedRoute === 'local') {
    throw new FaucetError(
      'invalid_request',
      'route_mode "local" is not served by the cloud gateway: local calls go to the Faucet bridge on the user\'s machine.',
    );
  }
  const reference = parseModel(body.model);
  const { feature: _feature, route_mode: _route, model: _qualified, ...openAiFields } = body;
  const request: ChatRequest = { ...openAiFields, model: reference.model };
  return { body, requestedRoute, reference, request, bounds: holdBounds(c.env, reference, request) };
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
  const { c, database, plan, reference, request } = call;
  try {
    let completion;
    const upstreamStarted = performance.now();
    // The gateway ends the call at its deadline, so its hold (which outlives the deadline) is never gone before it is booked.
    const signal = AbortSignal.timeout(call.limits.maxDurationSeconds * 1000);
    try {
      completion = await call.adapter.complete({ request, credential: plan.credential, callId: plan.keys.callId, signal });
    } catch (error) {
      await endUnanswered(call, error, signal);
      // The gateway's own deadline reads as a timeout, not as a failure of the upstream.
      throw signal.aborted ? new FaucetError('upstream_timeout', 'The call reached its longest allowed duration and was ended.') : error;
    }
    // Without the provider's count: upper bounds (the hold's input bound; the answer's UTF-8 bytes).
    const usage = meteredUsage(completion.usage, () => ({
      inputTokens: call.bounds.inputTokens,
      outputTokens: Math.min(
        call.bounds.outputTokens,
        utf8Bytes(
          completion.choices
            .map((choice) => (choice.message.content ?? '') + (choice.message.tool_calls ? JSON.stringify(choice.message.tool_calls) : ''))
            .join(''),
        ),
      ),
    }));
    const settleStarted = performance.now();
    const faucet = await settleCall(database, plan, reference, usage);
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
  const { c, requestId, database, plan, reference, request } = call;
  const upstream = new AbortController();
  const started = Date.now();
  let chunks;
  try {
    chunks = await call.adapter.stream({ request, credential: plan.credential, callId: plan.keys.callId, signal: upstream.signal });
  } catch (error) {
    await endUnanswered(call, error, upstream.signal).finally(call.release);
    throw error;
  }
  const stream = meteredStream({
    chunks,
    includeUsage: body.stream_options?.include_usage === true,
    bounds: call.bounds,
    requestId,
    deadlineMs: Math.max(0, call.limits.maxDurationSeconds * 1000 - (Date.now() - started)),
    drainMs: call.limits.drainMs,
    settle: (usage) => settleCall(database, plan, reference, usage).finally(call.release),
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

/**
 * The upstream gave no answer the gateway could use. A refusal (an HTTP error status) or a
 * connection that never opened means the provider bills nothing: the call is abandoned and its
 * request id freed. A timeout (or the call's deadline) means the provider had the request and may
 * be generating: the call is booked at its bound, marked estimated, so the platform never pays for
 * an unbilled call (docs/money.md, "The guarantee").
 */
async function endUnanswered(call: Call, error: unknown, signal: AbortSignal): Promise<void> {
  const timedOut = (FaucetError.isInstance(error) && error.code === 'upstream_timeout') || signal.aborted;
  if (!timedOut) {
    await abandonCall(call.database, call.plan);
    return;
  }
  await settleCall(call.database, call.plan, call.reference, estimatedUsage(call.bounds.inputTokens, call.bounds.outputTokens)).catch(
    (settleError: unknown) => {
      // Left in flight: the sweeper books it at the same bound after its deadline.
      call.c.var.logger?.error('booking an unanswered call failed', {
        code: FaucetError.isInstance(settleError) ? settleError.code : 'internal_error',
      });
    },
  );
}

const encoder = new TextEncoder();
function utf8Bytes(text: string): number {
  return encoder.encode(text).byteLength;
}

/** Milliseconds to one decimal, for `server-timing`. */
function tenths(milliseconds: number): string {
  return String(Math.round(milliseconds * 10) / 10);
}
