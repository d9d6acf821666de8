/**
 * The wallet Durable Object (docs/edge.md "The wallet object"): one per end-user wallet, named by the
 * session token. It authorizes calls against a lease — a hold Postgres granted on the wallet for a
 * chunk of its balance, and on the developer_key route part of the developer key's monthly budget —
 * in memory and its own storage, with no Postgres round trip; it writes each settlement to its
 * storage before answering, and flushes settlements to Postgres in batches from its alarm
 * (`faucet_settle_lease`: idempotent per call, the lease reset in the same statement). Prepaid online
 * charging (3GPP credit control) in small.
 *
 * This file is its RPC surface; each concern is a part sharing one `WalletState` (wallet-state.ts):
 * - authorize-step.ts: the facts → `decideCall` (workers/shared/authorize/decide-call.ts) → renew
 *   once → store the call;
 * - quota-step.ts: a call's hold grows by a quota step as its answer streams (docs/quota.md);
 * - lease-sync.ts: the lease statements in one queue (flush and renew, release, recall pause);
 * - context-cache.ts: the session's context, cached, and the generation a pushed revocation bumps;
 * - alarm-and-flush.ts: the alarm (never-settled calls booked at their bound, flush, renewal, idle
 *   release) and the flush asked for.
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
  WalletQuotaAnswer,
  WalletQuotaStep,
  WalletSettlement,
  WalletSnapshot,
} from '#shared/durable-objects.ts';
import type { Env } from '#shared/env.ts';
import { intSetting } from '#shared/env.ts';
import { isDatabaseUnreachable } from '#shared/database-unreachable.ts';
import { WalletAlarm } from './alarm-and-flush.ts';
import { AuthorizeStep } from './authorize-step.ts';
import { ContextCache } from './context-cache.ts';
import { logRowOf, type StoredCall, units, usdString } from './lease-book.ts';
import type { CallLogFacts } from '#shared/calls/call-log.ts';
import { LeaseSync } from './lease-sync.ts';
import { QuotaStep } from './quota-step.ts';
import { WalletState } from './wallet-state.ts';

export class WalletObject extends DurableObject<Env> implements WalletObjectContract {
  private readonly state: WalletState;
  private readonly leases: LeaseSync;
  private readonly contexts: ContextCache;
  private readonly alarms: WalletAlarm;
  private readonly authorizeStep: AuthorizeStep;
  private readonly quotaStep: QuotaStep;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.state = new WalletState(ctx, env);
    this.leases = new LeaseSync(this.state, () => this.alarms.schedule());
    this.contexts = new ContextCache(this.state, this.leases);
    this.alarms = new WalletAlarm(this.state, this.leases);
    this.authorizeStep = new AuthorizeStep(this.state, this.leases, this.contexts, this.alarms);
    this.quotaStep = new QuotaStep(this.state, this.leases);
    void ctx.blockConcurrencyWhile(() => this.state.load());
  }

  async authorize(request: WalletCallRequest): Promise<WalletCallDecision> {
    // Settlements the gateway had not sent yet ride along: taken before this call is judged (it finds
    // those calls settled), and durable before it is answered — in its own write when it makes one.
    const carried = (request.settlements ?? []).map(([callId, settlement]) => this.settle(callId, settlement));
    try {
      return await this.authorizeStep.decide(request);
    } catch (error) {
      // Postgres could not be reached for what the call needed (its context, a lease renewal): nothing
      // was reserved for it. Answered as an outcome: an error need not keep its cause across the RPC.
      if (isDatabaseUnreachable(error)) return { outcome: 'unavailable' };
      throw error;
    } finally {
      if (carried.length > 0) {
        this.state.writeUnwritten();
        await Promise.all(carried);
      }
    }
  }

  async extend(callId: string, step: WalletQuotaStep): Promise<WalletQuotaAnswer> {
    try {
      return await this.quotaStep.extend(callId, step);
    } catch (error) {
      // The renewal could not reach Postgres: nothing more is held, and the gateway ends the answer.
      if (isDatabaseUnreachable(error)) return { outcome: 'unavailable' };
      throw error;
    }
  }

  async settle(callId: string, settlement: WalletSettlement): Promise<void> {
    const { state } = this;
    const call = state.calls.get(callId);
    // Unknown: booked already (flushed, or swept at its bound) — a late settlement changes nothing.
    if (call === undefined || call.state !== 'in_flight') return;
    const settled: StoredCall = {
      ...call,
      state: 'settled',
      booking: settlement.booking,
      retailUnits: units(settlement.retailUsd),
      ...(settlement.log === undefined ? {} : { log: logRowOf(call.record, settlement.log) }),
    };
    state.calls.set(callId, settled);
    state.callLeftFlight();
    if (intSetting(this.env.WALLET_FLUSH_INTERVAL_MS, 1000) === 0) {
      // Write-through: booked before the gateway answers (for tests and operators who want it).
      await this.ctx.storage.put(`call:${callId}`, settled);
      await this.leases.sync(0n);
      return;
    }
    // Durable before this answer leaves, in a write shared with the calls and settlements around it;
    // the flush's alarm is set once that write is issued, in the same commit.
    await state.writeSettled(callId);
    await this.alarms.schedule();
  }

  async abandon(callId: string, log?: CallLogFacts): Promise<void> {
    const { state } = this;
    const call = state.calls.get(callId);
    if (call === undefined || call.state !== 'in_flight') return;
    state.calls.delete(callId);
    state.callLeftFlight();
    state.claims.delete(call.clientRequestId);
    await this.ctx.storage.delete([`call:${callId}`, `claim:${call.clientRequestId}`]);
    if (log !== undefined) {
      // Nothing is booked, but the developer's request log shows why.
      await state.keepLog(logRowOf(call.record, log));
      await this.alarms.schedule();
    }
  }

  async revokeSessions(tokenHashes: string[] | null): Promise<void> {
    // The API has revoked them in Postgres first: forgetting every cached answer makes the next call
    // read the session again; the hashes named are also refused here at once, even by a read in flight.
    this.contexts.forget();
    if (tokenHashes !== null && tokenHashes.length > 0) {
      for (const hash of tokenHashes) this.state.revoked.add(hash);
      await this.ctx.storage.put(Object.fromEntries(tokenHashes.map((hash) => [`revoked:${hash}`, Date.now()])));
    }
  }

  async forgetContexts(): Promise<void> {
    this.contexts.forget();
  }

  async recall(): Promise<WalletSnapshot> {
    await this.leases.recall();
    return this.snapshot();
  }

  async resume(): Promise<void> {
    this.leases.resume();
  }

  async flush(settlingMs = 0): Promise<WalletSnapshot & { error: string | null }> {
    if (settlingMs > 0) await this.state.settlementsWithin(settlingMs);
    const error = await this.alarms.flush();
    return { ...(await this.snapshot()), error };
  }

  async snapshot(): Promise<WalletSnapshot> {
    const { state } = this;
    let inFlight = 0;
    let unflushed = 0;
    let refused = 0;
    let unflushedUnits = 0n;
    for (const call of state.calls.values()) {
      if (call.state === 'in_flight') inFlight += 1;
      else if (call.state === 'settled') {
        unflushed += 1;
        unflushedUnits += call.retailUnits;
      } else refused += 1;
    }
    return {
      leaseUsd: usdString(state.meta.lease.units),
      leaseExpiresAt: state.meta.lease.expiresAt === 0 ? null : state.meta.lease.expiresAt,
      committedUsd: usdString(state.committed()),
      inFlight,
      unflushed,
      unflushedUsd: usdString(unflushedUnits),
      refused,
      statements: state.statements,
      keyBudgets: Object.fromEntries(
        Object.entries(state.meta.lease.budgets ?? {}).map(([keyId, budget]) => [
          keyId,
          { leaseUsd: usdString(budget.units), committedUsd: usdString(state.budgetCommitted(keyId)) },
        ]),
      ),
    };
  }

  override async alarm(): Promise<void> {
    await this.alarms.run();
  }
}
