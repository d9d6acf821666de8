/**
 * The wallet Durable Object (docs/edge.md "The wallet object"): one per end-user wallet,
 * named by the session token. It authorizes calls against a lease — a hold Postgres granted on the
 * wallet for a chunk of its balance, and on the developer_key route part of the developer key's
 * monthly budget — in memory and its own storage, with no Postgres
 * round trip; it writes each settlement to its storage before answering, and flushes settlements to
 * Postgres in batches from its alarm (`faucet_settle_lease`: idempotent per call, the lease reset in
 * the same statement). Prepaid online charging (3GPP credit control) in small.
 *
 * What it decides and what it leaves to Postgres — the decision itself is `decideCall`
 * (workers/shared/authorize/decide-call.ts, table-tested in Node): this object reads the facts, holds
 * the room, renews it once when the decision asks, and stores what was decided:
 * - The session and the app's settings come from Postgres (`faucet_lease_context`), cached per
 *   (session, feature, model, route) for `freshMs`, refreshed in the background up to `staleMs`, and
 *   read again after that: a developer's suspension or an app's archive takes effect within seconds;
 *   a revoked session at once when the API pushes it (`revokeSessions`), else within the same bound.
 * - Only calls Postgres calls `leasable` are authorized here (the platform route, the byok route with
 *   the end user's key, the developer_key route with the developer's); the rest answer `database` and
 *   take the per-call path, which decides them exactly. So does a developer_key call whose budget
 *   lease, renewed, ends before the call may; one the renewed budget has no room for falls back to
 *   the platform route or is refused `budget_exceeded`, as the per-call path does. The app's per-end-user limits
 *   cap the lease in Postgres, which counts it against them for the per-call calls: its amount as
 *   spent (spend limits), its call slots as calls in the window (requests per minute). A call the
 *   capped lease cannot cover is refused naming the limit.
 * - The client's x-request-id is claimed in this object's storage (scoped to the wallet's end user).
 * - A call it cannot cover waits for one lease renewal (one statement), which also flushes.
 * - A call never settled (its isolate died) is booked at its bound once its deadline and grace pass.
 *
 * Exactly once: a call is booked by its money key (`call:<uuid>`), unique in Postgres; a flush whose
 * answer is lost is sent again and its calls come back `already_booked`, reducing the lease once. The
 * object's storage keeps a settled call until Postgres has it.
 */
import { DurableObject } from 'cloudflare:workers';
import type {
  WalletCallDecision,
  WalletCallRequest,
  WalletObjectContract,
  WalletSettlement,
  WalletSnapshot,
} from '#shared/durable-objects.ts';
import type { Env } from '#shared/env.ts';
import { intSetting } from '#shared/env.ts';
import { callLimits } from '#shared/calls/call-limits.ts';
import { walletName } from '#shared/auth/session-token.ts';
import { createHttpDatabase } from '#shared/db.ts';
import { isDatabaseUnreachable } from '#shared/database-unreachable.ts';
import type { SqlDatabase } from '#shared/query.ts';
import { createLogger, type Logger } from '#shared/logger.ts';
import { parseDatabaseAmount, parseUsdSetting, usdFromUnits, usdToUnits, zeroUsd } from '#shared/money/index.ts';
import { type CallFacts, type CallRoom, decideCall, leaseCovers } from '#shared/authorize/decide-call.ts';
import {
  budgetCommittedUnits,
  callRoom,
  committedUnits,
  heldKeyBudgets,
  type Lease,
  leaseLimits,
  mergeKeyBudgets,
  leaseRate,
  type StoredCall,
  totalCommitted,
  units,
  usdString,
} from './lease-book.ts';
import { boundBooking } from './bound-booking.ts';
import { flushLease } from '#shared/wallet/settle-lease.ts';
import { fetchCallContext, fetchCallContextWithLease, type CallContext } from './lease-statements.ts';

/** Context answers are used as they are for this long... */
const freshMs = 2_000;
/** ...and, refreshed in the background, until this age; older ones are read again before the call. */
const staleMs = 10_000;
/** At most this many settlements per flush statement. */
const flushBatch = 500;
/** An idle wallet gives its lease back after this long with nothing in flight or unflushed. */
const idleReleaseMs = 120_000;
/** The longest a recall holds new leases back, should the debit that asked never say it is done. */
const recallPauseMs = 3_000;
/** How long a claimed x-request-id stays claimed after its call. */
const claimTtlMs = 24 * 3600_000;
/**
 * Under a requests-per-minute limit, the call slots asked for beyond the calls held unrecorded: a
 * burst of this many more needs no renewal; the per-call routes see this many fewer meanwhile.
 */
const callSlotChunk = 2;
/**
 * After a renewal found no room in a developer key's budget for a call, calls on that key take the
 * platform route (or are refused when they asked for the key) without asking again for this long.
 */
const budgetShortMs = 10_000;

interface Meta {
  wallet: string | null;
  endUserId: string | null;
  lease: Lease;
  /** Only where the environment names no database (the tests' per-file databases). */
  databaseUrl: string | null;
  lastActivity: number;
}

interface CachedContext {
  row: CallContext;
  fetchedAt: number;
  refreshing: boolean;
}

export class WalletObject extends DurableObject<Env> implements WalletObjectContract {
  private meta: Meta = { wallet: null, endUserId: null, lease: { units: 0n, expiresAt: 0 }, databaseUrl: null, lastActivity: 0 };
  private readonly calls = new Map<string, StoredCall>();
  private readonly claims = new Map<string, number>();
  private readonly revoked = new Set<string>();
  /** The recalls whose debit is being written (each until when at most): no new lease meanwhile. */
  private readonly recalls: number[] = [];
  /** Release statements (a recall's or the idle one) queued or running: the lease they set covers only the calls already in flight. */
  private releases = 0;
  /** Bumped by every pushed revocation: a context read that started before one is not kept. */
  private generation = 0;
  private readonly contexts = new Map<string, CachedContext>();
  /** `endUserId/wallet` pairs checked to match (walletName is a pure function of the two and the secret). */
  private readonly verifiedOwners = new Set<string>();
  /** Developer keys whose budget had no room for a call, each until when (epoch ms): see `budgetShortMs`. */
  private readonly budgetShortUntil = new Map<string, number>();
  private database: SqlDatabase | null = null;
  /** Postgres statements this instance has run (the snapshot shows them: tests, the benchmark, operators). */
  private statements = 0;
  /** Every Postgres statement that touches the lease runs in this order, one at a time. */
  private ledgerQueue: Promise<unknown> = Promise.resolve();
  private readonly logger: Logger;
  /**
   * The alarm this instance last set or read (null: none); undefined: not known (read it). Only this
   * object sets its alarm, and a firing alarm forgets it, so a known value saves a storage read per call.
   */
  private alarmAt: number | null | undefined = undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.logger = createLogger({ service: 'gateway', component: 'wallet' }, env.LOG_LEVEL);
    void ctx.blockConcurrencyWhile(async () => {
      const stored = await ctx.storage.list<unknown>();
      for (const [key, value] of stored) {
        if (key === 'meta') this.meta = value as Meta;
        else if (key.startsWith('call:')) this.calls.set(key.slice(5), value as StoredCall);
        else if (key.startsWith('claim:')) this.claims.set(key.slice(6), value as number);
        else if (key.startsWith('revoked:')) this.revoked.add(key.slice(8));
      }
      // A call still kept claims its request id (its claim is written when it leaves the storage).
      for (const call of this.calls.values()) this.claims.set(call.clientRequestId, claimUntil(call));
    });
  }

  async authorize(request: WalletCallRequest): Promise<WalletCallDecision> {
    try {
      return await this.decide(request);
    } catch (error) {
      // Postgres could not be reached for what the call needed (its context, a lease renewal): nothing
      // was reserved for it. Answered as an outcome: an error need not keep its cause across the RPC.
      if (isDatabaseUnreachable(error)) return { outcome: 'unavailable' };
      throw error;
    }
  }

  /**
   * Read the context → `decideCall` on the room held → (room short: one renewal, then `decideCall`
   * again on the renewed room) → store the call → answer. Every decision is taken on the room as it
   * is after the last await, with no await between it and the call's claim in memory.
   */
  private async decide(request: WalletCallRequest): Promise<WalletCallDecision> {
    this.adoptDatabaseUrl(request.databaseUrl);
    if (this.revoked.has(request.tokenHash)) return { outcome: 'refused', refusal: 'unauthorized', featureKey: null };
    const limits = callLimits(this.env);
    const { call } = request;
    const platformHold = request.platformHold === null ? null : parseDatabaseAmount(request.platformHold);
    const catalogCost = request.catalogCost === null ? null : parseDatabaseAmount(request.catalogCost);
    const runsUntil = Date.now() + (limits.maxDurationSeconds + limits.settleGraceSeconds) * 1000;
    // A lease that falls short: the session's context and the lease come in one statement when the
    // context has to be read anyway (the first call of a wallet waits on one round trip).
    const leaseShort = !leaseCovers(this.room(call.clientRequestId, false), platformHold ?? zeroUsd(), runsUntil);
    const platformWorst = platformHold === null ? 0n : usdToUnits(platformHold);
    const catalogWorst = catalogCost === null ? 0n : usdToUnits(catalogCost);
    const context = await this.context(request, leaseShort ? maxUnits(platformWorst, catalogWorst) : null, catalogWorst);
    const routing = { aliases: context.aliases, fallbacks: context.fallbacks };
    // The token's wallet part routed the call here; the session's end user must be this wallet's.
    const ownsWallet =
      context.outcome === 'leasable' && context.endUserId !== null && (await this.isWalletOf(context.endUserId, request.wallet));
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
        route: context.routeMode,
        routeKey: context.routeKey,
        maxOutputTokens: context.maxOutputTokens,
        developerPricePerMtok: context.developerPricePerMtokUsd === null ? null : parseDatabaseAmount(context.developerPricePerMtokUsd),
        openFee: context.openFeeUsd === null ? null : parseDatabaseAmount(context.openFeeUsd),
      },
    };
    let room = this.room(call.clientRequestId, false);
    let decision = decideCall(facts, room);
    const endUserId = context.endUserId as string;
    if (
      this.meta.wallet === null &&
      context.outcome === 'leasable' &&
      !(decision.outcome === 'refused' && decision.code === 'unauthorized')
    ) {
      // The object is this end user's from now on (a renewal flushes and leases for them).
      this.meta = { ...this.meta, wallet: request.wallet, endUserId };
      await this.ctx.storage.put('meta', this.meta);
      room = this.room(call.clientRequestId, false);
      decision = decideCall(facts, room);
    }
    if (decision.outcome === 'needs_room') {
      // One renewal (which also flushes what is settled); what it still cannot cover is refused. The
      // keys marked short when the call was first decided stay its view of them.
      const { budgetNeed } = decision;
      await this.sync(
        usdToUnits(decision.leaseNeed),
        budgetNeed === null ? {} : { budgetNeed: { keyId: budgetNeed.keyId, units: usdToUnits(budgetNeed.amount) } },
      );
      decision = decideCall(facts, this.room(call.clientRequestId, true, room.budgetShort));
    }
    if ((decision.outcome === 'refused' || decision.outcome === 'authorized') && decision.budgetShort !== undefined) {
      this.budgetShortUntil.set(decision.budgetShort, Date.now() + budgetShortMs);
    }
    if (decision.outcome === 'per_call') return { outcome: 'database' };
    if (decision.outcome === 'needs_room') throw new Error('a renewed room is decided, never asked to grow');
    if (decision.outcome === 'refused') {
      if (decision.code === 'routing_changed') return { outcome: 'routing_changed', routing };
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
        app_id: context.appId,
        end_user_id: endUserId,
        feature_key: context.featureKey,
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
        routeMode: route,
        providerCredentialId: key?.id ?? null,
      },
      booking: null,
      refusal: null,
    };
    this.calls.set(call.id, stored);
    this.claims.set(call.clientRequestId, claimUntil(stored));
    this.meta.lastActivity = Date.now();
    // Durable before the gateway calls the upstream (the output gate holds the answer until written).
    // One key: the call's record carries its request id's claim until it leaves the storage, and the
    // last activity is kept with the next flush (a restart loses at most that second of it).
    await this.ctx.storage.put(`call:${call.id}`, stored);
    await this.scheduleAlarm();
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
    const now = Date.now();
    return callRoom({
      lease: this.meta.lease,
      calls: this.calls.values(),
      now,
      renewed,
      recalling: this.recalling(),
      budgetShort: budgetShort ?? new Set([...this.budgetShortUntil].filter(([, until]) => until > now).map(([keyId]) => keyId)),
      claimedUntil: this.claims.get(clientRequestId) ?? null,
    });
  }

  async settle(callId: string, settlement: WalletSettlement): Promise<void> {
    const call = this.calls.get(callId);
    // Unknown: booked already (flushed, or swept at its bound) — a late settlement changes nothing.
    if (call === undefined || call.state !== 'in_flight') return;
    const settled: StoredCall = { ...call, state: 'settled', booking: settlement.booking, retailUnits: units(settlement.retailUsd) };
    this.calls.set(callId, settled);
    await this.ctx.storage.put(`call:${callId}`, settled);
    if (intSetting(this.env.WALLET_FLUSH_INTERVAL_MS, 1000) === 0) {
      // Write-through: booked before the gateway answers (the per-call behaviour, for tests and operators who want it).
      await this.sync(0n);
      return;
    }
    await this.scheduleAlarm();
  }

  async abandon(callId: string): Promise<void> {
    const call = this.calls.get(callId);
    if (call === undefined || call.state !== 'in_flight') return;
    this.calls.delete(callId);
    this.claims.delete(call.clientRequestId);
    await this.ctx.storage.delete([`call:${callId}`, `claim:${call.clientRequestId}`]);
  }

  async revokeSessions(tokenHashes: string[] | null): Promise<void> {
    // The API has revoked them in Postgres first: forgetting every cached answer makes the next call
    // read the session again; the hashes named are also refused here at once, even by a read in flight.
    this.generation += 1;
    this.contexts.clear();
    if (tokenHashes !== null && tokenHashes.length > 0) {
      for (const hash of tokenHashes) this.revoked.add(hash);
      await this.ctx.storage.put(Object.fromEntries(tokenHashes.map((hash) => [`revoked:${hash}`, Date.now()])));
    }
  }

  async forgetContexts(): Promise<void> {
    this.generation += 1;
    this.contexts.clear();
  }

  async recall(): Promise<WalletSnapshot> {
    // No new lease until the debit that asked is written (resume) or a moment has passed: a call
    // racing the debit waits for it instead of taking the money back first.
    const until = Date.now() + recallPauseMs;
    this.recalls.push(until);
    await this.sync(0n, { release: true });
    return this.snapshot();
  }

  /** One recall's debit is written; the others' still hold new leases back. */
  async resume(): Promise<void> {
    this.recalls.shift();
  }

  async flush(): Promise<WalletSnapshot & { error: string | null }> {
    if (!this.hasUnflushed()) return { ...(await this.snapshot()), error: null };
    const error = await this.sync(0n).then(
      () => null,
      (failure: unknown) => failureCode(failure),
    );
    if (error !== null) await this.scheduleRetry();
    return { ...(await this.snapshot()), error };
  }

  async snapshot(): Promise<WalletSnapshot> {
    let inFlight = 0;
    let unflushed = 0;
    let refused = 0;
    let unflushedUnits = 0n;
    for (const call of this.calls.values()) {
      if (call.state === 'in_flight') inFlight += 1;
      else if (call.state === 'settled') {
        unflushed += 1;
        unflushedUnits += call.retailUnits;
      } else refused += 1;
    }
    return {
      leaseUsd: usdString(this.meta.lease.units),
      leaseExpiresAt: this.meta.lease.expiresAt === 0 ? null : this.meta.lease.expiresAt,
      committedUsd: usdString(this.committed()),
      inFlight,
      unflushed,
      unflushedUsd: usdString(unflushedUnits),
      refused,
      statements: this.statements,
      keyBudgets: Object.fromEntries(
        Object.entries(this.meta.lease.budgets ?? {}).map(([keyId, budget]) => [
          keyId,
          { leaseUsd: usdString(budget.units), committedUsd: usdString(this.budgetCommitted(keyId)) },
        ]),
      ),
    };
  }

  /** Flushes, books calls never settled, renews or gives back the lease; retries on its own after a failure. */
  override async alarm(): Promise<void> {
    this.alarmAt = undefined;
    try {
      await this.sweep();
      const idle = this.calls.size === 0 && Date.now() - this.meta.lastActivity >= idleReleaseMs;
      if (this.hasUnflushed() || this.leaseNeedsRenewal() || (idle && this.holdsLease())) {
        await this.sync(0n, { release: idle });
      }
      this.forgetOldClaims();
      await this.scheduleAlarm();
    } catch (error) {
      this.logger.error('wallet flush failed', { code: failureCode(error) });
      await this.scheduleRetry();
    }
  }

  /** Postgres unreachable or the statement failed: nothing was written; the alarm tries again soon. */
  private async scheduleRetry(): Promise<void> {
    await this.setAlarm(Date.now() + Math.max(intSetting(this.env.WALLET_FLUSH_INTERVAL_MS, 1000), 500));
  }

  /** A release is queued or running, or a recall's debit is being written. */
  private recalling(): boolean {
    return this.releases > 0 || this.recalls.some((until) => until > Date.now());
  }

  /** Waits while a recall holds new leases back (each at most `recallPauseMs`). */
  private async leaseUnpaused(): Promise<void> {
    for (;;) {
      const now = Date.now();
      while (this.recalls.length > 0 && (this.recalls[0] as number) <= now) this.recalls.shift();
      if (this.recalls.length === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  private committed(): bigint {
    return totalCommitted(this.calls.values());
  }

  /**
   * Calls in the end user's 60 s window that Postgres has no record of yet: authorized in the last
   * minute, in flight or settled and not flushed (a refused one's record is written), but for
   * `excluded` (a flush's batch, whose records it writes) — the per-call path's window counts a call
   * by when it was authorized, so a call in flight for longer than a minute has left it.
   */
  private unrecordedCalls(excluded: ReadonlySet<string> = new Set(), state?: StoredCall['state']): number {
    const since = Date.now() - 60_000;
    let count = 0;
    for (const call of this.calls.values()) {
      if (call.state === 'refused' || call.rating.authorizedAt <= since || excluded.has(call.id)) continue;
      if (state === undefined || call.state === state) count += 1;
    }
    return count;
  }

  /** What the object's calls commit of a developer key's budget (`inFlightOnly`: the calls in flight alone). */
  private budgetCommitted(keyId: string, inFlightOnly = false): bigint {
    let total = 0n;
    for (const call of this.calls.values()) {
      if (!inFlightOnly || call.state === 'in_flight') total += budgetCommittedUnits(call, keyId);
    }
    return total;
  }

  private hasUnflushed(): boolean {
    for (const call of this.calls.values()) if (call.state === 'settled') return true;
    return false;
  }

  /**
   * The lease holds money, call slots (which the per-call path counts against the end user's window)
   * or part of a developer key's budget.
   */
  private holdsLease(): boolean {
    const { lease } = this.meta;
    return lease.units > 0n || (lease.rate?.slots ?? 0) > 0 || Object.keys(lease.budgets ?? {}).length > 0;
  }

  /** The lease is renewed once half its life is gone while the wallet is in use. */
  private leaseNeedsRenewal(): boolean {
    const { lease } = this.meta;
    if (!this.holdsLease()) return false;
    const ttl = this.leaseTtlSeconds() * 1000;
    return lease.expiresAt - Date.now() < ttl / 2 && Date.now() - this.meta.lastActivity < idleReleaseMs;
  }

  private leaseTtlSeconds(): number {
    return 2 * callLimits(this.env).holdTtlSeconds;
  }

  private chunk(): bigint {
    return usdToUnits(parseUsdSetting(this.env.WALLET_LEASE_USD, usdFromUnits(100_000_000n)));
  }

  /**
   * The part of a developer key's budget asked for beyond the calls on it: smaller than the balance's
   * chunk, since every end user's object of the developer's apps shares the one budget.
   */
  private keyChunk(): bigint {
    return usdToUnits(parseUsdSetting(this.env.WALLET_KEY_BUDGET_USD, usdFromUnits(10_000_000n)));
  }

  /**
   * One statement: books the settled calls (with their call records) and sets the lease to cover
   * what is committed plus `need` plus a chunk (or, releasing, only the calls in flight), and each
   * developer key's budget lease the same way (`budgetNeed`: a call's worst-case cost on one key).
   * Runs after any statement before it; the lease is never set below what Postgres already granted
   * minus what it booked, so reservations made while it runs stay covered.
   */
  private sync(need: bigint, options: { release?: boolean; budgetNeed?: { keyId: string; units: bigint } } = {}): Promise<void> {
    const release = options.release === true;
    // A release (a recall's, or the idle one) sets the lease to the calls in flight when it begins:
    // until it has, no call is authorized on the lease in memory (`recalling`).
    if (release) this.releases += 1;
    const run = this.ledgerQueue.then(() => this.syncNow(need, release, options.budgetNeed));
    this.ledgerQueue = run.catch(() => undefined);
    if (release) {
      void run
        .finally(() => {
          this.releases -= 1;
        })
        .catch(() => undefined);
    }
    return run;
  }

  private async syncNow(need: bigint, release: boolean, budgetNeed?: { keyId: string; units: bigint }): Promise<void> {
    if (!release) await this.leaseUnpaused();
    const endUserId = this.meta.endUserId;
    if (endUserId === null || this.meta.wallet === null) return;
    const batch = [...this.calls.values()].filter((call) => call.state === 'settled').slice(0, flushBatch);
    const batchRetail = batch.reduce((sum, call) => sum + call.retailUnits, 0n);
    const afterBatch = this.committed() - batchRetail;
    const target = release ? this.committedInFlight() : afterBatch + need + this.chunk();
    const flushing = new Set(batch.map((call) => call.id));
    const callSlots = release ? this.unrecordedCalls(flushing, 'in_flight') : this.unrecordedCalls(flushing) + callSlotChunk;
    const budgets = this.budgetTargets(batch, release, budgetNeed);
    const result = await flushLease(this.openDatabase(), {
      endUserId,
      leaseKey: `lease:${this.meta.wallet}`,
      calls: batch.map((call) => call.record),
      bookings: batch.map((call) => call.booking as Record<string, unknown>),
      targetUsd: usdString(target),
      keep: !release,
      ttlSeconds: this.leaseTtlSeconds(),
      callSlots,
      budgets,
    });
    const flushed: StoredCall[] = [];
    const refused: StoredCall[] = [];
    result.results.forEach((outcome, index) => {
      const call = batch[index] as StoredCall;
      if (outcome.outcome === 'refused') {
        refused.push({ ...call, state: 'refused', refusal: `${outcome.reason}: ${outcome.message}` });
        this.logger.error('wallet settlement refused by the ledger', { call_id: call.id, reason: outcome.reason });
      } else {
        flushed.push(call);
      }
    });
    for (const call of flushed) this.calls.delete(call.id);
    for (const call of refused) this.calls.set(call.id, call);
    this.meta = {
      ...this.meta,
      lease: {
        units: units(result.leaseUsd),
        expiresAt: result.leaseExpiresAt.getTime(),
        limits: leaseLimits(result.spendLimits),
        rate: leaseRate(result.rateLimit),
        budgets: heldKeyBudgets(result.keyBudgets),
      },
    };
    // One implicit transaction: the flushed calls go, their request ids stay claimed on their own,
    // and the new lease is kept, together.
    await this.ctx.storage.delete(flushed.map((call) => `call:${call.id}`));
    await this.ctx.storage.put({
      meta: this.meta,
      ...Object.fromEntries(refused.map((call) => [`call:${call.id}`, call])),
      ...Object.fromEntries(flushed.map((call) => [`claim:${call.clientRequestId}`, claimUntil(call)])),
    });
    if (this.hasUnflushed()) await this.scheduleAlarm();
  }

  /**
   * The budget each developer key's lease should hold after a flush of `batch`: what the object's
   * calls on it commit less the batch's recorded costs (booked now), plus a call's need and a chunk;
   * releasing, the calls in flight alone. Every key the object holds or has calls on is named (one
   * not named keeps its lease until it expires). Undefined: none.
   */
  private budgetTargets(
    batch: StoredCall[],
    release: boolean,
    budgetNeed: { keyId: string; units: bigint } | undefined,
  ): Record<string, string> | undefined {
    const keys = new Set(Object.keys(this.meta.lease.budgets ?? {}));
    for (const call of this.calls.values()) {
      if (call.rating.routeMode === 'developer_key' && call.rating.providerCredentialId) keys.add(call.rating.providerCredentialId);
    }
    if (budgetNeed !== undefined) keys.add(budgetNeed.keyId);
    if (keys.size === 0) return undefined;
    const targets: Record<string, string> = {};
    for (const keyId of keys) {
      if (release) {
        targets[keyId] = usdString(this.budgetCommitted(keyId, true));
        continue;
      }
      const booked = batch.reduce((sum, call) => sum + budgetCommittedUnits(call, keyId), 0n);
      const need = budgetNeed?.keyId === keyId ? budgetNeed.units : 0n;
      targets[keyId] = usdString(this.budgetCommitted(keyId) - booked + need + this.keyChunk());
    }
    return targets;
  }

  private committedInFlight(): bigint {
    let total = 0n;
    for (const call of this.calls.values()) if (call.state === 'in_flight') total += committedUnits(call);
    return total;
  }

  /** Calls in flight past their deadline and grace: settled at their bound (the sweeper's rule, docs/money.md). */
  private async sweep(): Promise<void> {
    const now = Date.now();
    const writes: Record<string, StoredCall> = {};
    for (const call of this.calls.values()) {
      if (call.state !== 'in_flight' || call.sweepAt > now) continue;
      const { booking, retailUsd } = boundBooking(this.env, call);
      const settled: StoredCall = { ...call, state: 'settled', booking, retailUnits: units(retailUsd) };
      this.calls.set(call.id, settled);
      writes[`call:${call.id}`] = settled;
    }
    if (Object.keys(writes).length > 0) await this.ctx.storage.put(writes);
  }

  private forgetOldClaims(): void {
    const now = Date.now();
    const expired = [...this.claims].filter(([, until]) => until <= now).map(([id]) => id);
    for (const id of expired) this.claims.delete(id);
    if (expired.length > 0) void this.ctx.storage.delete(expired.map((id) => `claim:${id}`));
  }

  /** The next alarm: soon when something waits to be flushed, else at the next sweep, renewal or idle release. */
  private async scheduleAlarm(): Promise<void> {
    const now = Date.now();
    const times: number[] = [];
    if (this.hasUnflushed()) times.push(now + intSetting(this.env.WALLET_FLUSH_INTERVAL_MS, 1000));
    for (const call of this.calls.values()) if (call.state === 'in_flight') times.push(call.sweepAt);
    if (this.holdsLease()) {
      times.push(this.meta.lease.expiresAt - (this.leaseTtlSeconds() * 1000) / 2);
      times.push(this.meta.lastActivity + idleReleaseMs);
    }
    if (times.length === 0) return;
    const next = Math.max(Math.min(...times), now);
    if (this.alarmAt === undefined) {
      const stored = await this.ctx.storage.getAlarm();
      // A setAlarm that ended meanwhile knows better than this earlier read.
      if (this.alarmAt === undefined) this.alarmAt = stored;
    }
    if (this.alarmAt === null || this.alarmAt > next) await this.setAlarm(next);
  }

  private async setAlarm(at: number): Promise<void> {
    this.alarmAt = undefined;
    await this.ctx.storage.setAlarm(at);
    this.alarmAt = at;
  }

  private async context(request: WalletCallRequest, leaseNeed: bigint | null, budgetNeed: bigint): Promise<CallContext> {
    const key = JSON.stringify([
      request.tokenHash,
      request.featureKey,
      request.provider,
      request.model,
      request.requestedRoute,
      request.alias,
      request.fallbacks,
      request.platformHold === null,
      request.catalogCost === null,
      request.poolAvailable,
    ]);
    const cached = this.contexts.get(key);
    const age = cached === undefined ? Number.POSITIVE_INFINITY : Date.now() - cached.fetchedAt;
    if (cached !== undefined && age < staleMs) {
      if (age >= freshMs && !cached.refreshing) {
        cached.refreshing = true;
        void this.fetchContext(request)
          .then((row) => this.contexts.set(key, { row, fetchedAt: Date.now(), refreshing: false }))
          .catch(() => {
            cached.refreshing = false;
          });
      }
      return cached.row;
    }
    const row = leaseNeed !== null ? await this.fetchContextAndLease(request, leaseNeed, budgetNeed) : await this.fetchContext(request);
    this.contexts.set(key, { row, fetchedAt: Date.now(), refreshing: false });
    return row;
  }

  /**
   * The context and the lease in one statement, in turn with every other statement that sets the
   * lease; on the developer_key route part of the key's budget too (`budgetNeed` plus a chunk).
   */
  private fetchContextAndLease(request: WalletCallRequest, need: bigint, budgetNeed: bigint): Promise<CallContext> {
    const generation = this.generation;
    const run = this.ledgerQueue.then(async () => {
      await this.leaseUnpaused();
      const { context, lease } = await fetchCallContextWithLease(this.openDatabase(), request, {
        wallet: request.wallet,
        targetUsd: usdString(this.committed() + need + this.chunk()),
        ttlSeconds: this.leaseTtlSeconds(),
        callSlots: this.unrecordedCalls() + callSlotChunk,
        budgetUsd: usdString(budgetNeed + this.keyChunk()),
      });
      if (lease !== null) {
        // A lease is granted only for the end user this object is named after: the object is theirs
        // from now on (a recall arriving before this call's checks end must find the lease to give back).
        this.meta = {
          ...this.meta,
          wallet: request.wallet,
          endUserId: context.endUserId,
          lease: {
            units: units(lease.leaseUsd),
            expiresAt: lease.leaseExpiresAt.getTime(),
            limits: leaseLimits(lease.spendLimits),
            rate: leaseRate(lease.rateLimit),
            // The key's budget granted now, with those the object held before (unchanged by this statement).
            budgets: mergeKeyBudgets(this.meta.lease.budgets, lease.keyBudgets),
          },
        };
        await this.ctx.storage.put('meta', this.meta);
      }
      return context;
    });
    this.ledgerQueue = run.catch(() => undefined);
    // A revocation pushed while this was read: the context may predate it; read it again.
    return run.then((context) => (generation === this.generation ? context : this.fetchContext(request)));
  }

  private async fetchContext(request: WalletCallRequest): Promise<CallContext> {
    const generation = this.generation;
    const context = await fetchCallContext(this.openDatabase(), request);
    // A revocation pushed while this was read: the answer may predate it; read again.
    return generation === this.generation ? context : this.fetchContext(request);
  }

  /** Whether `wallet` is `endUserId`'s; a match is remembered (an HMAC per call otherwise), a mismatch never is. */
  private async isWalletOf(endUserId: string, wallet: string): Promise<boolean> {
    const pair = `${endUserId}/${wallet}`;
    if (this.verifiedOwners.has(pair)) return true;
    if ((await walletName(this.env.SESSION_HASH_SECRET, endUserId)) !== wallet) return false;
    this.verifiedOwners.add(pair);
    return true;
  }

  private adoptDatabaseUrl(url: string | undefined): void {
    if (this.env.ENVIRONMENT !== 'test' || this.env.DATABASE_URL || url === undefined || url === this.meta.databaseUrl) return;
    this.meta = { ...this.meta, databaseUrl: url };
    this.database = null;
  }

  /**
   * Its statements go over Neon's HTTP query endpoint: one round trip each, with no connection to
   * open first — a cold object's first statement costs what a warm one's does.
   */
  private openDatabase(): SqlDatabase {
    if (this.database !== null) return this.database;
    const url = this.env.DATABASE_URL ?? this.meta.databaseUrl ?? undefined;
    const database = createHttpDatabase({ ...this.env, DATABASE_URL: url });
    this.database = {
      execute: (query) => {
        this.statements += 1;
        return database.execute(query);
      },
    };
    return this.database;
  }
}

/** A request id stays claimed for a day after its call was authorized. */
function claimUntil(call: StoredCall): number {
  return call.rating.authorizedAt + claimTtlMs;
}

const maxUnits = (a: bigint, b: bigint): bigint => (a > b ? a : b);

/** What a failed statement is reported as: its SQLSTATE (the query and its data are never repeated). */
function failureCode(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
    current = current.cause;
  }
  return 'unreachable';
}
