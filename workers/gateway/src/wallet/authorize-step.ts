/**
 * A wallet object's authorize step: the call's facts (its context, context-cache.ts) and the room the
 * object holds (its lease less its calls, lease-book.ts) go to `decideCall`
 * (workers/shared/authorize/decide-call.ts, table-tested in Node); when the decision asks for more
 * room, the lease is renewed once (lease-sync.ts, which also flushes) and the call decided again on
 * the renewed room; an authorized call is stored, durable before the gateway calls the upstream.
 * - Calls on the platform route, the byok route with the end user's key and the developer_key route
 *   with the developer's are authorized on the lease. The app's per-end-user limits cap the lease in
 *   Postgres; a call the capped lease cannot cover is refused naming the limit. A developer_key call
 *   the renewed budget has no room for falls back to the platform route or is refused
 *   `budget_exceeded`, and the key is marked short for `budgetShortMs`.
 * - The client's x-request-id is claimed in the object's storage (scoped to the wallet's end user).
 */
import type { WalletCallDecision, WalletCallRequest } from '#shared/durable-objects.ts';
import { callLimits } from '#shared/calls/call-limits.ts';
import { parseDatabaseAmount, usdToUnits, zeroUsd } from '#shared/money/index.ts';
import { type CallFacts, type CallRoom, decideCall, leaseCovers } from '#shared/authorize/decide-call.ts';
import type { WalletAlarm } from './alarm-and-flush.ts';
import type { ContextCache } from './context-cache.ts';
import { callRoom, type StoredCall } from './lease-book.ts';
import type { LeaseSync } from './lease-sync.ts';
import { claimUntil, type WalletState } from './wallet-state.ts';
import { callLogRow } from '#shared/calls/call-log.ts';

/**
 * After a renewal found no room in a developer key's budget for a call, calls on that key take the
 * platform route (or are refused when they asked for the key) without asking again for this long.
 */
const budgetShortMs = 10_000;

export class AuthorizeStep {
  /** Developer keys whose budget had no room for a call, each until when (epoch ms): see `budgetShortMs`. */
  private readonly budgetShortUntil = new Map<string, number>();

  constructor(
    private readonly state: WalletState,
    private readonly leases: LeaseSync,
    private readonly contexts: ContextCache,
    private readonly alarms: WalletAlarm,
  ) {}

  /**
   * Read the context → `decideCall` on the room held → (room short: one renewal, then `decideCall`
   * again on the renewed room) → store the call → answer. Every decision is taken on the room as it
   * is after the last await, with no await between it and the call's claim in memory.
   */
  async decide(request: WalletCallRequest): Promise<WalletCallDecision> {
    const { state } = this;
    state.adoptDatabaseUrl(request.databaseUrl);
    if (state.revoked.has(request.tokenHash)) return { outcome: 'refused', refusal: 'unauthorized', featureKey: null };
    const limits = callLimits(state.env);
    const { call } = request;
    const platformHold = request.platformHold === null ? null : parseDatabaseAmount(request.platformHold);
    const catalogCost = request.catalogCost === null ? null : parseDatabaseAmount(request.catalogCost);
    const runsUntil = Date.now() + (limits.maxDurationSeconds + limits.settleGraceSeconds) * 1000;
    // A lease that falls short: the session's context and the lease come in one statement when the
    // context has to be read anyway (the first call of a wallet waits on one round trip).
    const leaseShort = !leaseCovers(this.room(call.clientRequestId, false), platformHold ?? zeroUsd(), runsUntil);
    const platformWorst = platformHold === null ? 0n : usdToUnits(platformHold);
    const catalogWorst = catalogCost === null ? 0n : usdToUnits(catalogCost);
    const context = await this.contexts.get(request, leaseShort ? maxUnits(platformWorst, catalogWorst) : null, catalogWorst);
    const routing = { aliases: context.aliases, fallbacks: context.fallbacks };
    // The token's wallet part routed the call here; the session's end user must be this wallet's.
    const ownsWallet =
      context.outcome === 'leasable' && context.endUserId !== null && (await this.contexts.isWalletOf(context.endUserId, request.wallet));
    const facts: CallFacts = {
      call: {
        requestedRoute: request.requestedRoute,
        boundInputTokens: call.boundInputTokens,
        boundOutputTokens: call.boundOutputTokens,
        platformHold,
        catalogCost,
        poolAvailable: request.poolAvailable,
        askedAt: Date.now(),
        runsUntil,
      },
      context: {
        outcome: context.outcome,
        sessionExpiresAt: context.sessionExpiresAt,
        ownsWallet,
        provider: request.provider,
        routePolicy: context.routePolicy,
        userKey: context.userKey,
        developerKey: context.developerKey,
        maxOutputTokens: context.maxOutputTokens,
        developerPricePerMtok: context.developerPricePerMtokUsd === null ? null : parseDatabaseAmount(context.developerPricePerMtokUsd),
        openFee: context.openFeeUsd === null ? null : parseDatabaseAmount(context.openFeeUsd),
      },
    };
    let room = this.room(call.clientRequestId, false);
    let decision = decideCall(facts, room);
    const endUserId = context.endUserId as string;
    if (
      state.meta.wallet === null &&
      context.outcome === 'leasable' &&
      !(decision.outcome === 'refused' && decision.code === 'unauthorized')
    ) {
      // The object is this end user's from now on (a renewal flushes and leases for them).
      state.meta = { ...state.meta, wallet: request.wallet, endUserId };
      await state.ctx.storage.put('meta', state.meta);
      room = this.room(call.clientRequestId, false);
      decision = decideCall(facts, room);
    }
    if (decision.outcome === 'needs_room') {
      // One renewal (which also flushes what is settled); what it still cannot cover is refused. The
      // keys marked short when the call was first decided stay its view of them.
      const { budgetNeed } = decision;
      await this.leases.sync(
        usdToUnits(decision.leaseNeed),
        budgetNeed === null ? {} : { budgetNeed: { keyId: budgetNeed.keyId, units: usdToUnits(budgetNeed.amount) } },
      );
      decision = decideCall(facts, this.room(call.clientRequestId, true, room.budgetShort));
    }
    if ((decision.outcome === 'refused' || decision.outcome === 'authorized') && decision.budgetShort !== undefined) {
      this.budgetShortUntil.set(decision.budgetShort, Date.now() + budgetShortMs);
    }
    if (decision.outcome === 'needs_room') throw new Error('a renewed room is decided, never asked to grow');
    if (decision.outcome === 'refused') {
      if (decision.code === 'routing_changed') return { outcome: 'routing_changed', routing };
      if (request.log !== undefined && decision.code !== 'unauthorized' && context.appId !== null && state.meta.endUserId === endUserId) {
        // The developer's request log shows the refusal (written with the object's next flush).
        await state.keepLog(
          callLogRow(
            {
              id: call.id,
              appId: context.appId as string,
              endUserId,
              // A feature that could not be resolved (an archived app or feature) is logged as asked ('' = the default).
              featureKey: context.featureKey ?? request.featureKey ?? '',
              clientRequestId: call.clientRequestId,
              provider: request.provider,
              model: request.model,
              routeMode: null,
              providerCredentialId: null,
              createdAt: new Date(call.authorizedAt).toISOString(),
            },
            { ...request.log, outcome: 'refused', errorCode: decision.code, errorMessage: refusalMessage(decision) },
          ),
        );
        await this.alarms.schedule();
      }
      return {
        outcome: 'refused',
        refusal: decision.code,
        ...(decision.refusedLimit === undefined ? {} : { refusedLimit: decision.refusedLimit }),
        ...(decision.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: decision.retryAfterSeconds }),
        featureKey: decision.code === 'unauthorized' ? null : context.featureKey,
      };
    }

    const { route, key } = decision;
    const stored: StoredCall = {
      id: call.id,
      moneyKey: call.moneyKey,
      clientRequestId: call.clientRequestId,
      state: 'in_flight',
      reservedUnits: usdToUnits(decision.hold),
      ...(decision.budget === null ? {} : { budgetUnits: usdToUnits(decision.budget.amount) }),
      retailUnits: 0n,
      sweepAt: Date.now() + (call.maxDurationSeconds + limits.settleGraceSeconds) * 1000,
      record: {
        id: call.id,
        money_key: call.moneyKey,
        client_request_id: call.clientRequestId,
        fingerprint: call.fingerprint,
        app_id: context.appId as string,
        end_user_id: endUserId,
        feature_key: context.featureKey as string,
        route_mode: route,
        provider: request.provider,
        model: request.model,
        provider_credential_id: key?.id ?? null,
        bound_input_tokens: call.boundInputTokens,
        bound_output_tokens: decision.boundOutputTokens,
        deadline_at: new Date(call.authorizedAt + call.maxDurationSeconds * 1000).toISOString(),
        created_at: new Date(call.authorizedAt).toISOString(),
        developer_price_per_mtok_usd: context.developerPricePerMtokUsd,
        open_fee_usd: context.openFeeUsd,
        developer_share_bps: context.developerShareBps,
        platform_markup_bps: call.platformMarkupBps,
        platform_fee_bps: call.platformFeeBps,
        fallback_models: request.fallbacks,
        bound_cache_lifetime: call.cacheLifetime ?? null,
      },
      rating: {
        developerShareBps: context.developerShareBps,
        developerPricePerMtokUsd: context.developerPricePerMtokUsd,
        openFeeUsd: context.openFeeUsd,
        maxOutputTokens: context.maxOutputTokens,
        platformMarkupBps: call.platformMarkupBps,
        platformFeeBps: call.platformFeeBps,
        authorizedAt: call.authorizedAt,
        featureKey: context.featureKey as string,
        appId: context.appId as string,
        endUserId,
        candidates: call.candidates,
        cacheLifetime: call.cacheLifetime ?? null,
        routeMode: route,
        providerCredentialId: key?.id ?? null,
      },
      booking: null,
      refusal: null,
    };
    state.calls.set(call.id, stored);
    state.claims.set(call.clientRequestId, claimUntil(stored));
    state.meta.lastActivity = Date.now();
    // Durable before the gateway calls the upstream (the output gate holds the answer until written).
    // One key: the call's record carries its request id's claim until it leaves the storage, and the
    // last activity is kept with the next flush (a restart loses at most that second of it). The
    // settlements waiting for a write go in the same one.
    await state.ctx.storage.put(state.withSettled({ [`call:${call.id}`]: stored }));
    await this.alarms.schedule();
    return {
      outcome: 'authorized',
      appId: context.appId as string,
      endUserId,
      featureKey: context.featureKey as string,
      developerShareBps: context.developerShareBps,
      developerPricePerMtokUsd: context.developerPricePerMtokUsd,
      openFeeUsd: context.openFeeUsd,
      maxOutputTokens: context.maxOutputTokens,
      routing,
      routeMode: route,
      routeKey: key,
      fallbackKeys: route === 'byok' ? context.fallbackKeys : {},
    };
  }

  /** The room this object holds for a call with this request id (`renewed`: after its one renewal). */
  private room(clientRequestId: string, renewed: boolean, budgetShort?: ReadonlySet<string>): CallRoom {
    const { state } = this;
    const now = Date.now();
    return callRoom({
      lease: state.meta.lease,
      calls: state.calls.values(),
      now,
      renewed,
      recalling: this.leases.recalling(),
      budgetShort: budgetShort ?? new Set([...this.budgetShortUntil].filter(([, until]) => until > now).map(([keyId]) => keyId)),
      claimedUntil: state.claims.get(clientRequestId) ?? null,
    });
  }
}

const maxUnits = (a: bigint, b: bigint): bigint => (a > b ? a : b);

/** The refusal as the request log words it: its code and the limit it hit (the gateway words the client's answer). */
function refusalMessage(decision: { code: string; refusedLimit?: string; retryAfterSeconds?: number }): string {
  const limit = decision.refusedLimit === undefined ? '' : ` (limit: ${decision.refusedLimit})`;
  const retry = decision.retryAfterSeconds === undefined ? '' : `; retry after ${decision.retryAfterSeconds} s`;
  return `Refused before the provider was called: ${decision.code.replaceAll('_', ' ')}${limit}${retry}.`;
}
