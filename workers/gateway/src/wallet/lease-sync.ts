/**
 * A wallet object's lease statements, run one at a time in one queue (the ledger queue): the flush
 * and renewal (`sync`: books the settled calls, sets the lease to what is committed plus a need and
 * a chunk, each developer key's budget lease likewise), the release (the lease down to the calls in
 * flight: a recall's, or the idle one) and a context read with its lease (a wallet's first call). A
 * recall holds new leases back until its debit is written (`resume`) or `recallPauseMs` has passed
 * since its release was written.
 */
import type { WalletCallRequest } from '#shared/durable-objects.ts';
import { parseUsdSetting, usdFromUnits, usdToUnits } from '#shared/money/index.ts';
import type { CallLogRow } from '#shared/calls/call-log.ts';
import { traceMessages } from '#shared/traces/trace-message.ts';
import { kickRelay } from '#shared/webhooks/relay.ts';
import { flushLease } from '#shared/wallet/settle-lease.ts';
import {
  budgetCommittedUnits,
  committedUnits,
  heldKeyBudgets,
  leaseLimits,
  leaseRate,
  mergeKeyBudgets,
  type StoredCall,
  units,
  usdString,
} from './lease-book.ts';
import { type CallContext, fetchCallContextWithLease } from './lease-statements.ts';
import { claimUntil, type WalletState } from './wallet-state.ts';

/** At most this many settlements per flush statement. */
const flushBatch = 500;
/** The longest a recall holds new leases back, should the debit that asked never say it is done. */
const recallPauseMs = 3_000;
/**
 * Under a requests-per-minute limit, the call slots asked for beyond the calls held unrecorded: a
 * burst of this many more needs no renewal.
 */
const callSlotChunk = 2;

export class LeaseSync {
  /**
   * The recalls whose debit is being written (each until when at most, counted from when its release
   * was written: a release slow to run must not use up the debit's time): no new lease meanwhile.
   */
  private readonly recalls: { until: number }[] = [];
  /** Release statements (a recall's or the idle one) queued or running: the lease they set covers only the calls already in flight. */
  private releases = 0;
  /** Every Postgres statement that touches the lease runs in this order, one at a time. */
  private ledgerQueue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly state: WalletState,
    /** Sets the object's next alarm (alarm-and-flush.ts): after a flush that left calls to flush. */
    private readonly scheduleAlarm: () => Promise<void>,
  ) {}

  /**
   * Gives the lease back down to the calls in flight. No new lease until the debit that asked is
   * written (`resume`) or a moment has passed since the release was: a call racing the debit waits
   * for it instead of taking the money back first, however long the release took.
   */
  recall(): Promise<void> {
    const pause = { until: Number.POSITIVE_INFINITY };
    this.recalls.push(pause);
    return this.sync(0n, { release: true }).finally(() => {
      pause.until = Date.now() + recallPauseMs;
    });
  }

  /** One recall's debit is written; the others' still hold new leases back. */
  resume(): void {
    this.recalls.shift();
  }

  /** A release is queued or running, or a recall's debit is being written. */
  recalling(): boolean {
    return this.releases > 0 || this.recalls.some((pause) => pause.until > Date.now());
  }

  /**
   * One statement: books the settled calls (with their call records) and sets the lease to cover
   * what is committed plus `need` plus a chunk (or, releasing, only the calls in flight), and each
   * developer key's budget lease the same way (`budgetNeed`: a call's worst-case cost on one key).
   * Runs after any statement before it; the lease is never set below what Postgres already granted
   * minus what it booked, so reservations made while it runs stay covered.
   */
  sync(need: bigint, options: { release?: boolean; budgetNeed?: { keyId: string; units: bigint } } = {}): Promise<void> {
    const release = options.release === true;
    // A release (a recall's, or the idle one) sets the lease to the calls in flight when it begins:
    // until it has, no call is authorized on the lease in memory (`recalling`).
    if (release) this.releases += 1;
    const run = this.queued(() => this.syncNow(need, release, options.budgetNeed));
    if (release) {
      void run
        .finally(() => {
          this.releases -= 1;
        })
        .catch(() => undefined);
    }
    return run;
  }

  /**
   * The context and the lease in one statement, in turn with every other statement that sets the
   * lease; on the developer_key route part of the key's budget too (`budgetNeed` plus a chunk).
   */
  leaseWithContext(request: WalletCallRequest, need: bigint, budgetNeed: bigint): Promise<CallContext> {
    const { state } = this;
    return this.queued(async () => {
      await this.leaseUnpaused();
      const { context, lease } = await fetchCallContextWithLease(state.openDatabase(), request, {
        wallet: request.wallet,
        targetUsd: usdString(state.committed() + need + this.chunk()),
        ttlSeconds: state.leaseTtlSeconds(),
        callSlots: this.unrecordedCalls() + callSlotChunk,
        // Part of the developer key's budget, when the call may take that key.
        budgetUsd:
          request.requestedRoute === null || request.requestedRoute === 'developer_key' ? usdString(budgetNeed + this.keyChunk()) : null,
      });
      if (lease !== null) {
        // A lease is granted only for the end user this object is named after: the object is theirs
        // from now on (a recall arriving before this call's checks end must find the lease to give back).
        state.meta = {
          ...state.meta,
          wallet: request.wallet,
          endUserId: context.endUserId,
          lease: {
            units: units(lease.leaseUsd),
            expiresAt: lease.leaseExpiresAt.getTime(),
            limits: leaseLimits(lease.spendLimits),
            rate: leaseRate(lease.rateLimit),
            // The key's budget granted now, with those the object held before (unchanged by this statement).
            budgets: mergeKeyBudgets(state.meta.lease.budgets, lease.keyBudgets),
          },
        };
        await state.ctx.storage.put('meta', state.meta);
      }
      return context;
    });
  }

  /** Runs `work` after every lease statement queued before it. */
  private queued<T>(work: () => Promise<T>): Promise<T> {
    const run = this.ledgerQueue.then(work);
    this.ledgerQueue = run.catch(() => undefined);
    return run;
  }

  private async syncNow(need: bigint, release: boolean, budgetNeed?: { keyId: string; units: bigint }): Promise<void> {
    const { state } = this;
    if (!release) await this.leaseUnpaused();
    const endUserId = state.meta.endUserId;
    if (endUserId === null || state.meta.wallet === null) return;
    const batch = [...state.calls.values()].filter((call) => call.state === 'settled').slice(0, flushBatch);
    const batchRetail = batch.reduce((sum, call) => sum + call.retailUnits, 0n);
    const afterBatch = state.committed() - batchRetail;
    const target = release ? this.committedInFlight() : afterBatch + need + this.chunk();
    const flushing = new Set(batch.map((call) => call.id));
    const callSlots = release ? this.unrecordedCalls(flushing, 'in_flight') : this.unrecordedCalls(flushing) + callSlotChunk;
    const budgets = this.budgetTargets(batch, release, budgetNeed);
    // The request log: the batch's rows, and those of calls that left no booking.
    const pendingLogs = [...state.logs.values()].slice(0, flushBatch);
    const logs = [...batch.flatMap((call) => (call.log === undefined ? [] : [call.log])), ...pendingLogs];
    const result = await flushLease(state.openDatabase(), {
      endUserId,
      leaseKey: `lease:${state.meta.wallet}`,
      calls: batch.map((call) => call.record),
      bookings: batch.map((call) => call.booking as Record<string, unknown>),
      targetUsd: usdString(target),
      keep: !release,
      ttlSeconds: state.leaseTtlSeconds(),
      callSlots,
      budgets,
      logs,
    });
    const flushed: StoredCall[] = [];
    const refused: StoredCall[] = [];
    result.results.forEach((outcome, index) => {
      const call = batch[index] as StoredCall;
      if (outcome.outcome === 'refused') {
        refused.push({ ...call, state: 'refused', refusal: `${outcome.reason}: ${outcome.message}` });
        state.logger.error('wallet settlement refused by the ledger', { call_id: call.id, reason: outcome.reason });
      } else {
        flushed.push(call);
      }
    });
    for (const call of flushed) state.calls.delete(call.id);
    for (const call of refused) state.calls.set(call.id, call);
    state.meta = {
      ...state.meta,
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
    for (const row of pendingLogs) state.logs.delete(row.id);
    await state.ctx.storage.delete([...flushed.map((call) => `call:${call.id}`), ...pendingLogs.map((row) => `log:${row.id}`)]);
    await state.ctx.storage.put(
      state.withSettled({
        meta: state.meta,
        ...Object.fromEntries(refused.map((call) => [`call:${call.id}`, call])),
        ...Object.fromEntries(flushed.map((call) => [`claim:${call.clientRequestId}`, claimUntil(call)])),
      }),
    );
    if (result.tracedApps.length > 0) await this.queueTraces(logs, result.tracedApps);
    if (result.webhookEvents || logs.some(reachedSpendLimit)) await this.wakeWebhookRelay();
    if (state.hasUnflushed()) await this.scheduleAlarm();
  }

  /**
   * The flush wrote webhook events (docs/webhooks.md): the API's relay turns them into deliveries.
   * A refusal by a spend limit writes its event in a trigger the flag cannot see (the request log's
   * insert fires it at the statement's end), so such a refusal wakes the relay too. A lost wake-up
   * delays the events until the cron's relay, never loses them: they wait in the outbox.
   */
  private async wakeWebhookRelay(): Promise<void> {
    const { state } = this;
    try {
      await kickRelay({ queue: state.env.WEBHOOKS, databaseUrl: state.env.DATABASE_URL ? null : state.meta.databaseUrl });
    } catch (error) {
      state.logger.warn('webhook relay not woken', { error: error instanceof Error ? error.name : 'unknown' });
    }
  }

  /**
   * Tells the traces queue which of the rows just written belong to apps that export traces (the
   * flush statement named them). After the flush, never instead of it: a message lost loses spans,
   * never a booking.
   */
  private async queueTraces(logs: readonly CallLogRow[], tracedApps: readonly string[]): Promise<void> {
    const { state } = this;
    const queue = state.env.TRACES;
    if (queue === undefined) return;
    const messages = traceMessages(logs, tracedApps, state.env.DATABASE_URL ? null : state.meta.databaseUrl);
    if (messages.length === 0) return;
    try {
      await queue.sendBatch(messages.map((body) => ({ body })));
    } catch (error) {
      state.logger.warn('trace messages not queued', { apps: messages.length, error: error instanceof Error ? error.name : 'unknown' });
    }
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
    const { state } = this;
    const keys = new Set(Object.keys(state.meta.lease.budgets ?? {}));
    for (const call of state.calls.values()) {
      if (call.rating.routeMode === 'developer_key' && call.rating.providerCredentialId) keys.add(call.rating.providerCredentialId);
    }
    if (budgetNeed !== undefined) keys.add(budgetNeed.keyId);
    if (keys.size === 0) return undefined;
    const targets: Record<string, string> = {};
    for (const keyId of keys) {
      if (release) {
        targets[keyId] = usdString(state.budgetCommitted(keyId, true));
        continue;
      }
      const booked = batch.reduce((sum, call) => sum + budgetCommittedUnits(call, keyId), 0n);
      const need = budgetNeed?.keyId === keyId ? budgetNeed.units : 0n;
      targets[keyId] = usdString(state.budgetCommitted(keyId) - booked + need + this.keyChunk());
    }
    return targets;
  }

  /** Waits while a recall holds new leases back (each at most `recallPauseMs`). */
  private async leaseUnpaused(): Promise<void> {
    for (;;) {
      const now = Date.now();
      while ((this.recalls[0]?.until ?? Number.POSITIVE_INFINITY) <= now) this.recalls.shift();
      if (this.recalls.length === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  private committedInFlight(): bigint {
    let total = 0n;
    for (const call of this.state.calls.values()) if (call.state === 'in_flight') total += committedUnits(call);
    return total;
  }

  /**
   * Calls in the end user's 60 s window that Postgres has no record of yet: authorized in the last
   * minute, in flight or settled and not flushed (a refused one's record is written), but for
   * `excluded` (a flush's batch, whose records it writes) — the end user's window counts a call
   * by when it was authorized, so a call in flight for longer than a minute has left it.
   */
  private unrecordedCalls(excluded: ReadonlySet<string> = new Set(), state?: StoredCall['state']): number {
    const since = Date.now() - 60_000;
    let count = 0;
    for (const call of this.state.calls.values()) {
      if (call.state === 'refused' || call.rating.authorizedAt <= since || excluded.has(call.id)) continue;
      if (state === undefined || call.state === state) count += 1;
    }
    return count;
  }

  private chunk(): bigint {
    return usdToUnits(parseUsdSetting(this.state.env.WALLET_LEASE_USD, usdFromUnits(100_000_000n)));
  }

  /**
   * The part of a developer key's budget asked for beyond the calls on it: smaller than the balance's
   * chunk, since every end user's object of the developer's apps shares the one budget.
   */
  private keyChunk(): bigint {
    return usdToUnits(parseUsdSetting(this.state.env.WALLET_KEY_BUDGET_USD, usdFromUnits(10_000_000n)));
  }
}

const reachedSpendLimit = (row: CallLogRow) => row.outcome === 'refused' && (row.error_code ?? '').startsWith('spend_limit_');
