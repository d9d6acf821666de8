/**
 * `POST /v1/embeddings`: OpenAI's embeddings API, for every embedding model the catalog prices of the
 * providers Faucet routes (surfaces/embeddings/). One call per request whatever the batch; held,
 * routed and settled by the same core as a chat call: the end user's wallet object authorizes it
 * (decideCall: route, key, hold of the input's bound; embeddings have no output), the provider is
 * called once with the call id as its request id (the upstream audit), and the call is booked per
 * input token — the provider's count, or the bound (marked estimated) when it reports none. A
 * feature's fallbacks are chat models: an embeddings call tries its own model only.
 */
import type { ServiceApp } from '#shared/app.ts';
import { bearerToken } from '#shared/auth/bearer.ts';
import { callLimits } from '#shared/calls/call-limits.ts';
import { intSetting } from '#shared/env.ts';
import { defaultUpstreamTimeoutMs } from '#shared/upstream/outbound-fetch.ts';
import { waitUntil } from '#shared/wait-until.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import type { GatewayDependencies } from '../gateway-dependencies.ts';
import { estimatedUsage } from '../metering/metered-usage.ts';
import { abandonCall, settleCall } from '../metering/settle-call.ts';
import type { ModelReference } from '../routing/parse-model.ts';
import { embeddingHoldBounds } from '../surfaces/embeddings/embedding-bounds.ts';
import { createEmbeddings } from '../surfaces/embeddings/embedding-providers.ts';
import { embeddingRequestFor, readEmbeddingsBody, type EmbeddingRequest } from '../surfaces/embeddings/embeddings-request.ts';
import { authorizeOnLease, walletOf } from '../wallet/authorize-on-lease.ts';
import { authorizeWithRouting, callKeysOf, sessionOf } from './call-start.ts';
import { readJsonBody } from './chat-completions.ts';
import { failureFacts, type CallLogFacts, type CallOutcome } from '#shared/calls/call-log.ts';

interface EmbeddingCandidate {
  reference: ModelReference;
  /** Null: a fallback (a chat model of the feature), never tried. */
  request: EmbeddingRequest | null;
  bounds: ReturnType<typeof embeddingHoldBounds> | null;
}

export function registerEmbeddings(app: ServiceApp, dependencies: GatewayDependencies): void {
  app.post('/v1/embeddings', async (c) => {
    const token = bearerToken(c);
    const { tokenHash, refusedForBody } = await sessionOf(c, token);
    const body = await readJsonBody(c).then(readEmbeddingsBody).catch(refusedForBody);
    if (body.route_mode === 'local') {
      await refusedForBody(new FaucetError('invalid_request', 'route_mode "local" is not served by the cloud gateway.'));
    }
    const requestedRoute = body.route_mode === 'local' ? undefined : body.route_mode;
    const started = performance.now();
    const limits = callLimits(c.env);
    const keys = await callKeysOf(c.var.requestId, body, limits);
    const { callId } = keys;
    const { plan, candidates } = await authorizeWithRouting<EmbeddingCandidate>(
      {
        tokenHash,
        feature: body.feature,
        model: body.model,
        candidateOf: (reference, primary) => {
          if (!primary) return { reference, request: null, bounds: null };
          const request = embeddingRequestFor(reference, body);
          return { reference, request, bounds: embeddingHoldBounds(c.env, reference, request.input, dependencies.priceCatalog) };
        },
        refusedForBody,
      },
      (input) =>
        authorizeOnLease(c.env, walletOf(c.env, token), {
          tokenHash,
          featureKey: body.feature,
          call: keys,
          requestedRoute,
          log: { surface: 'embeddings', requestedModel: body.model, stream: false },
          ...input,
        }),
    );
    const [primary] = candidates as [EmbeddingCandidate & { request: EmbeddingRequest; bounds: NonNullable<EmbeddingCandidate['bounds']> }];
    c.header('x-faucet-call-id', callId);
    const settling = { catalog: dependencies.priceCatalog };
    const authorizeMs = performance.now() - started;
    /** How the call went, for the request log. */
    const log = (outcome: CallOutcome, failure?: unknown): CallLogFacts => ({
      surface: 'embeddings',
      requestedModel: body.model,
      outcome,
      ...failureFacts(failure),
      stream: false,
      authorizeMs,
      firstByteMs: null,
      totalMs: performance.now() - started,
    });

    // The upstream call and its settlement run under `waitUntil`: a client that goes away must not
    // leave an answered call unbooked.
    const work = (async () => {
      const signal = AbortSignal.timeout(limits.maxDurationSeconds * 1000);
      const context = {
        fetch: dependencies.upstreamFetch,
        upstreamTimeoutMs: intSetting(c.env.UPSTREAM_TIMEOUT_MS, defaultUpstreamTimeoutMs),
        mockLatencyMs: intSetting(c.env.MOCK_PROVIDER_LATENCY_MS, 0),
      };
      let answer: Awaited<ReturnType<typeof createEmbeddings>>;
      try {
        answer = await createEmbeddings(context, primary.reference, {
          request: primary.request,
          credential: plan.credential,
          callId,
          signal,
        });
      } catch (error) {
        // A timeout: the provider had the request and may bill it — booked at the bound, estimated.
        // Anything else (a refusal, a connection never opened): nothing billed, the call abandoned.
        const timedOut = signal.aborted || (FaucetError.isInstance(error) && error.code === 'upstream_timeout');
        const failed = log('upstream_error', error);
        if (timedOut) await settleCall(plan, primary.reference, estimatedUsage(primary.bounds.worstCaseInputTokens, 0), settling, failed);
        else await abandonCall(plan, failed);
        throw signal.aborted ? new FaucetError('upstream_timeout', 'The call reached its longest allowed duration and was ended.') : error;
      }
      const faucet = await settleCall(plan, primary.reference, answer.usage, settling, log('answered'));
      return c.json({ ...answer.response, faucet }, 200);
    })();
    waitUntil(
      c,
      work.catch(() => undefined),
    );
    return work;
  });
}
