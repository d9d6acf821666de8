/**
 * How a model call starts, whatever its API: the session token checked before the body is read, the
 * call's keys, and its authorization by the end user's wallet object over the candidates the
 * feature's routing gives (aliases, fallbacks: the hold is sized over all of them). Shared by the
 * chat pipeline (chat-call.ts) and the embeddings route.
 */
import type { Context } from 'hono';
import type { AppEnv } from '#shared/app-env.ts';
import { findLiveSession, hashSessionToken } from '#shared/auth/require-session.ts';
import type { CallLimits } from '#shared/calls/call-limits.ts';
import { sha256Hex } from '#shared/crypto.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { resolveCandidates, routingCache, type FeatureRouting } from '../fallback/feature-routing.ts';
import { combinedBounds } from '../fallback/hold-candidates.ts';
import type { HoldBounds } from '../metering/hold-bounds.ts';
import { RoutingChanged, type AuthorizeInput, type CallKeys, type CallPlan } from '../routing/call-plan.ts';
import { parseModel, type ModelReference } from '../routing/parse-model.ts';

/**
 * The request's session token, checked for its shape before the body is read (a request without a
 * well-formed token learns nothing about its body), and how a body the gateway refuses (schema,
 * model, fields, bounds) is answered: 400 only for a live session, 401 whatever the body otherwise.
 * The live-session check runs on that error path alone (a valid call's session is checked by its
 * wallet object).
 */
export async function sessionOf(c: Context<AppEnv>, token: string) {
  const tokenHash = await hashSessionToken(token);
  if (tokenHash === undefined) throw new FaucetError('unauthorized', 'Invalid session token');
  const refusedForBody = async (error: unknown): Promise<never> => {
    if (!(await findLiveSession(c.var.database().db, tokenHash))) throw new FaucetError('unauthorized', 'Session is unknown or expired');
    throw error;
  };
  return { tokenHash, refusedForBody };
}

/** A new call's keys: the server's call id and money key, the client's request id, the fingerprint of its body. */
export async function callKeysOf(requestId: string, body: unknown, limits: CallLimits): Promise<CallKeys> {
  const callId = crypto.randomUUID();
  return {
    callId,
    moneyKey: `call:${callId}`,
    clientRequestId: requestId,
    fingerprint: await sha256Hex(JSON.stringify(body)),
    holdTtlSeconds: limits.holdTtlSeconds,
    maxDurationSeconds: limits.maxDurationSeconds,
  };
}

/** A model the call may try, with what it is sent and its bounds (null: never tried). */
export interface RoutedCandidate {
  reference: ModelReference;
  bounds: HoldBounds | null;
}

/**
 * Authorizes with the candidates the feature's routing gives (fallback/feature-routing.ts): with what
 * this isolate last saw of it, and once more with the feature's own when the object says it changed.
 * The hold is sized over every candidate (fallback/hold-candidates.ts). `candidateOf` sizes one
 * candidate: for the primary it throws what makes the body unservable (a 400 for a live session).
 */
export async function authorizeWithRouting<C extends RoutedCandidate>(
  input: {
    tokenHash: string;
    feature: string | undefined;
    model: string;
    candidateOf(reference: ModelReference, primary: boolean): C;
    refusedForBody(error: unknown): Promise<never>;
  },
  authorize: (input: Pick<AuthorizeInput, 'reference' | 'bounds' | 'routing'> & { candidates: C[] }) => Promise<CallPlan>,
): Promise<{ plan: CallPlan; candidates: C[]; held: HoldBounds; alias: string | null }> {
  let routing: FeatureRouting | null = routingCache.get(input.tokenHash, input.feature);
  for (let round = 0; ; round += 1) {
    let resolved: ReturnType<typeof resolveCandidates>;
    try {
      resolved = resolveCandidates(input.model, routing);
    } catch (error) {
      return input.refusedForBody(error);
    }
    // An alias not known yet: asked with a stand-in the object answers `routing_changed` to (or,
    // if the alias names exactly it, authorizes: its bounds are then the right ones).
    const primaryReference = resolved.primary ?? parseModel('mock:echo');
    let primary: C & { bounds: HoldBounds };
    try {
      primary = input.candidateOf(primaryReference, true) as C & { bounds: HoldBounds };
    } catch (error) {
      return input.refusedForBody(error);
    }
    const fallbacks = resolved.fallbacks.map((reference) => input.candidateOf(reference, false));
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
