/**
 * A wallet object's alarm and flush: the alarm books the calls never settled at their bound (their
 * isolate died; once their deadline and grace pass), flushes what is settled, renews the lease at
 * half its life while the wallet is in use and gives it back after `idleReleaseMs` idle; it is set for
 * the soonest of those, and after a failure tries again on its own. A flush asked for (operators,
 * tests) runs the same statement now.
 */
import { intSetting } from '#shared/env.ts';
import { boundBooking } from './bound-booking.ts';
import { type StoredCall, units } from './lease-book.ts';
import type { LeaseSync } from './lease-sync.ts';
import type { WalletState } from './wallet-state.ts';

/** An idle wallet gives its lease back after this long with nothing in flight or unflushed. */
const idleReleaseMs = 120_000;

export class WalletAlarm {
  /**
   * The alarm this instance last set or read (null: none); undefined: not known (read it). Only this
   * object sets its alarm, and a firing alarm forgets it, so a known value saves a storage read per call.
   */
  private alarmAt: number | null | undefined = undefined;

  constructor(
    private readonly state: WalletState,
    private readonly leases: LeaseSync,
  ) {}

  /** Flushes, books calls never settled, renews or gives back the lease; retries on its own after a failure. */
  async run(): Promise<void> {
    const { state } = this;
    this.alarmAt = undefined;
    try {
      await this.sweep();
      const idle = state.calls.size === 0 && Date.now() - state.meta.lastActivity >= idleReleaseMs;
      if (state.hasUnflushed() || this.leaseNeedsRenewal() || (idle && state.holdsLease())) {
        await this.leases.sync(0n, { release: idle });
      }
      this.forgetOldClaims();
      await this.schedule();
    } catch (error) {
      state.logger.error('wallet flush failed', { code: failureCode(error) });
      await this.retry();
    }
  }

  /** Flushes the settled calls now: null, or what the failure is reported as (the alarm then tries again soon). */
  async flush(): Promise<string | null> {
    if (!this.state.hasUnflushed()) return null;
    const error = await this.leases.sync(0n).then(
      () => null,
      (failure: unknown) => failureCode(failure),
    );
    if (error !== null) await this.retry();
    return error;
  }

  /** The next alarm: soon when something waits to be flushed, else at the next sweep, renewal or idle release. */
  async schedule(): Promise<void> {
    const { state } = this;
    const now = Date.now();
    const times: number[] = [];
    if (state.hasUnflushed()) times.push(now + intSetting(state.env.WALLET_FLUSH_INTERVAL_MS, 1000));
    for (const call of state.calls.values()) if (call.state === 'in_flight') times.push(call.sweepAt);
    if (state.holdsLease()) {
      times.push(state.meta.lease.expiresAt - (state.leaseTtlSeconds() * 1000) / 2);
      times.push(state.meta.lastActivity + idleReleaseMs);
    }
    if (times.length === 0) return;
    const next = Math.max(Math.min(...times), now);
    if (this.alarmAt === undefined) {
      const stored = await state.ctx.storage.getAlarm();
      // A setAlarm that ended meanwhile knows better than this earlier read.
      if (this.alarmAt === undefined) this.alarmAt = stored;
    }
    if (this.alarmAt === null || this.alarmAt > next) await this.setAlarm(next);
  }

  /** Postgres unreachable or the statement failed: nothing was written; the alarm tries again soon. */
  private async retry(): Promise<void> {
    await this.setAlarm(Date.now() + Math.max(intSetting(this.state.env.WALLET_FLUSH_INTERVAL_MS, 1000), 500));
  }

  private async setAlarm(at: number): Promise<void> {
    this.alarmAt = undefined;
    await this.state.ctx.storage.setAlarm(at);
    this.alarmAt = at;
  }

  /** Calls in flight past their deadline and grace: settled at their bound (the sweeper's rule, docs/money.md). */
  private async sweep(): Promise<void> {
    const { state } = this;
    const now = Date.now();
    const writes: Record<string, StoredCall> = {};
    for (const call of state.calls.values()) {
      if (call.state !== 'in_flight' || call.sweepAt > now) continue;
      const { booking, retailUsd } = boundBooking(state.env, call);
      const settled: StoredCall = { ...call, state: 'settled', booking, retailUnits: units(retailUsd) };
      state.calls.set(call.id, settled);
      writes[`call:${call.id}`] = settled;
    }
    if (Object.keys(writes).length === 0) return;
    await state.ctx.storage.put(writes);
    // A read waiting for these calls' settlements has them now.
    state.callLeftFlight();
  }

  private forgetOldClaims(): void {
    const { state } = this;
    const now = Date.now();
    const expired = [...state.claims].filter(([, until]) => until <= now).map(([id]) => id);
    for (const id of expired) state.claims.delete(id);
    if (expired.length > 0) void state.ctx.storage.delete(expired.map((id) => `claim:${id}`));
  }

  /** The lease is renewed once half its life is gone while the wallet is in use. */
  private leaseNeedsRenewal(): boolean {
    const { lease } = this.state.meta;
    if (!this.state.holdsLease()) return false;
    const ttl = this.state.leaseTtlSeconds() * 1000;
    return lease.expiresAt - Date.now() < ttl / 2 && Date.now() - this.state.meta.lastActivity < idleReleaseMs;
  }
}

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
