/**
 * `POST /v1/chat/completions`: authorize (session, feature, route, hold — one statement), call the
 * provider through its adapter, then settle (one statement) and answer with the completion plus
 * its `faucet` object, or stream it.
 */
import type { Context } from 'hono';
import type { AppEnv } from '../../../shared/app-env.ts';
import type { ServiceApp } from '../../../shared/app.ts';
import { bearerToken } from '../../../shared/auth/bearer.ts';
import { hashSessionToken } from '../../../shared/auth/require-session.ts';
import { intSetting } from '../../../shared/env.ts';
import { FaucetError } from '../../../shared/errors.ts';
import { waitUntil } from '../../../shared/wait-until.ts';
import { describeZodError } from '../../../shared/render-error.ts';
import type { GatewayDatabase, GatewayDependencies } from '../gateway-dependencies.ts';
import { meteredUsage } from '../metering/metered-usage.ts';
import { holdBounds } from '../metering/hold-bounds.ts';
import { abandonCall, settleCall } from '../metering/settle-call.ts';
import type { ChatRequest } from '../openai/chat-schemas.ts';
import { createAdapter } from '../providers/create-adapter.ts';
import type { ProviderAdapter } from '../providers/provider.ts';
import { authorizeCall, authorizeHoldInput, type CallPlan } from '../routing/authorize-call.ts';
import { parseModel, type ModelReference } from '../routing/parse-model.ts';
import { sseHeaders } from '../sse/format-sse.ts';
import { meteredStream } from '../streaming/metered-stream.ts';
import { countPromptTokens } from '../tokens/count-prompt-tokens.ts';
import { countTokens } from '../tokens/tokenize.ts';
import { defaultUpstreamTimeoutMs } from '../upstream/outbound-fetch.ts';
import { chatCompletionsBodySchema, type ChatCompletionsBody } from './chat-completions-body.ts';

interface Call {
  c: Context<AppEnv>;
  /** Milliseconds of the authorize statement (incl. opening the connection), for `server-timing`. */
  authorizeMs: number;
  requestId: string;
  database: GatewayDatabase;
  plan: CallPlan;
  reference: ModelReference;
  request: ChatRequest;
  adapter: ProviderAdapter;
  defer(work: Promise<unknown>): void;
}

export function registerChatCompletions(app: ServiceApp, dependencies: GatewayDependencies): void {
  app.post('/v1/chat/completions', async (c) => {
    const requestId = c.var.requestId;
    const body = await readBody(c);
    if (body.route_mode === 'local') {
      throw new FaucetError('invalid_request', 'route_mode "local" is not served by the cloud gateway: local calls go to the Faucet bridge on the user\'s machine.');
    }
    const tokenHash = await hashSessionToken(bearerToken(c));
    if (tokenHash === undefined) throw new FaucetError('unauthorized', 'Invalid session token');
    const reference = parseModel(body.model);
    const { feature, route_mode: requestedRoute, model: _qualified, ...openAiFields } = body;
    const request: ChatRequest = { ...openAiFields, model: reference.model };

    const defer = (work: Promise<unknown>) => waitUntil(c, work);
    const database = dependencies.openDatabase(c.env);
    const authorizeStarted = performance.now();
    let plan: CallPlan;
    try {
      plan = await authorizeCall(database, c.env, dependencies.credentialLookup, {
        tokenHash,
        featureKey: feature,
        requestId,
        requestedRoute,
        reference,
        ...authorizeHoldInput(holdBounds(c.env, reference, request)),
      });
    } catch (error) {
      defer(database.close());
      throw error;
    }

    const adapter = createAdapter(reference.entry.protocol, {
      fetch: dependencies.upstreamFetch,
      upstreamTimeoutMs: intSetting(c.env.UPSTREAM_TIMEOUT_MS, defaultUpstreamTimeoutMs),
      mockLatencyMs: intSetting(c.env.MOCK_PROVIDER_LATENCY_MS, 0),
    });
    const call: Call = { c, authorizeMs: performance.now() - authorizeStarted, requestId, database, plan, reference, request, adapter, defer };
    return body.stream === true ? streamCall(call, body) : completeCall(call);
  });
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
  const { c, requestId, database, plan, reference, request } = call;
  try {
    let completion;
    const upstreamStarted = performance.now();
    try {
      completion = await call.adapter.complete({ request, credential: plan.credential });
    } catch (error) {
      await abandonCall(database, plan, requestId);
      throw error;
    }
    const usage = meteredUsage(completion.usage, () => ({
      inputTokens: countPromptTokens(request.messages, request.tools),
      outputTokens: countTokens(completion.choices.map((choice) => choice.message.content ?? '').join('')),
    }));
    const settleStarted = performance.now();
    const faucet = await settleCall(database, c.env, plan, reference, requestId, usage);
    const timing = [
      `authorize;dur=${tenths(call.authorizeMs)}`,
      `upstream;dur=${tenths(settleStarted - upstreamStarted)}`,
      `settle;dur=${tenths(performance.now() - settleStarted)}`,
    ];
    return c.json({ ...completion, faucet }, 200, { 'server-timing': timing.join(', ') });
  } finally {
    call.defer(database.close());
  }
}

async function streamCall(call: Call, body: ChatCompletionsBody): Promise<Response> {
  const { c, requestId, database, plan, reference, request } = call;
  const upstream = new AbortController();
  let chunks;
  try {
    chunks = await call.adapter.stream({ request, credential: plan.credential, signal: upstream.signal });
  } catch (error) {
    await abandonCall(database, plan, requestId).finally(() => call.defer(database.close()));
    throw error;
  }
  const stream = meteredStream({
    chunks,
    includeUsage: body.stream_options?.include_usage === true,
    estimatedInputTokens: countPromptTokens(request.messages, request.tools),
    requestId,
    settle: (usage) => settleCall(database, c.env, plan, reference, requestId, usage).finally(() => database.close()),
    abandon: () => abandonCall(database, plan, requestId).finally(() => database.close()),
    stopUpstream: () => upstream.abort(),
    defer: call.defer,
    onSettleFailure: (error) =>
      c.var.logger?.error('stream settlement failed', { request_id: requestId, code: FaucetError.isInstance(error) ? error.code : 'internal_error' }),
  });
  return new Response(stream, { status: 200, headers: { ...sseHeaders, 'x-request-id': requestId } });
}

/** Milliseconds to one decimal, for `server-timing`. */
function tenths(milliseconds: number): string {
  return String(Math.round(milliseconds * 10) / 10);
}
