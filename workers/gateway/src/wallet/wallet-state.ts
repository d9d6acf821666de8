/**
 * What a wallet object keeps, in memory and in its storage: its meta (the wallet it serves, the lease
 * Postgres granted, its last activity), the calls it knows of (`call:<id>`), the x-request-ids they
 * claim (`claim:<id>`), the sessions pushed revoked (`revoked:<hash>`) and the request-log rows of
 * calls that left no booking (`log:<id>`); the sums the object's parts
 * read over them, and its database handle. One instance is shared by the object's parts
 * (authorize-step.ts, lease-sync.ts, context-cache.ts, alarm-and-flush.ts).
 */
import type { Env } from '#shared/env.ts';
import { callLimits } from '#shared/calls/call-limits.ts';
import { createHttpDatabase } from '#shared/db.ts';
import type { SqlDatabase } from '#shared/query.ts';
import { createLogger, type Logger } from '#shared/logger.ts';
import type { CallLogRow } from '#shared/calls/call-log.ts';
import { budgetCommittedUnits, type Lease, type StoredCall, totalCommitted } from './lease-book.ts';

/** How long a claimed x-request-id stays claimed after its call. */
const claimTtlMs = 24 * 3600_000;
/**
 * The longest a settlement waits for a write the object makes anyway (the next call's
 * authorization, a flush) before it is written on its own: settlements close together share one.
 */
const settlementWriteMs = 10;

interface Meta {
  wallet: string | null;
  endUserId: string | null;
  lease: Lease;
  /** Only where the environment names no database (the tests' per-file databases). */
  databaseUrl: string | null;
  lastActivity: number;
}

export class WalletState {
  meta: Meta = { wallet: null, endUserId: null, lease: { units: 0n, expiresAt: 0 }, databaseUrl: null, lastActivity: 0 };
  readonly calls = new Map<string, StoredCall>();
  readonly claims = new Map<string, number>();
  readonly revoked = new Set<string>();
  /** Request-log rows of calls that left no booking (abandoned, refused), kept (`log:<id>`) until a flush writes them. */
  readonly logs = new Map<string, CallLogRow>();
  /** Settled calls whose record is newer in memory than in storage, and who waits for it to be written. */
  private readonly unwritten = new Set<string>();
  private waitingForWrite: Array<() => void> = [];
  private writeTimer: ReturnType<typeof setTimeout> | null = null;
  private waitingForSettlement: Array<() => void> = [];
  /** Postgres statements this instance has run (the snapshot shows them: tests, the benchmark, operators). */
  statements = 0;
  readonly logger: Logger;
  private database: SqlDatabase | null = null;

  constructor(
    readonly ctx: DurableObjectState,
    readonly env: Env,
  ) {
    this.logger = createLogger({ service: 'gateway', component: 'wallet' }, env.LOG_LEVEL);
  }

  /** Reads the storage into memory (before the object takes its first call). */
  async load(): Promise<void> {
    const stored = await this.ctx.storage.list<unknown>();
    for (const [key, value] of stored) {
      if (key === 'meta') this.meta = value as Meta;
      else if (key.startsWith('call:')) this.calls.set(key.slice(5), value as StoredCall);
      else if (key.startsWith('claim:')) this.claims.set(key.slice(6), value as number);
      else if (key.startsWith('revoked:')) this.revoked.add(key.slice(8));
      else if (key.startsWith('log:')) this.logs.set(key.slice(4), value as CallLogRow);
    }
    // A call still kept claims its request id (its claim is written when it leaves the storage).
    for (const call of this.calls.values()) this.claims.set(call.clientRequestId, claimUntil(call));
  }

  committed(): bigint {
    return totalCommitted(this.calls.values());
  }

  /** What the object's calls commit of a developer key's budget (`inFlightOnly`: the calls in flight alone). */
  budgetCommitted(keyId: string, inFlightOnly = false): bigint {
    let total = 0n;
    for (const call of this.calls.values()) {
      if (!inFlightOnly || call.state === 'in_flight') total += budgetCommittedUnits(call, keyId);
    }
    return total;
  }

  /** Settled calls or request-log rows wait for a flush. */
  hasUnflushed(): boolean {
    if (this.logs.size > 0) return true;
    for (const call of this.calls.values()) if (call.state === 'settled') return true;
    return false;
  }

  /**
   * A settled call's record is written with the object's next write (a call's authorization, a
   * flush) or on its own within `settlementWriteMs`, whichever comes first: one storage commit for
   * settlements and calls close together instead of one each. Resolves once that write is issued,
   * so the caller's answer — the gateway's settlement acknowledged — leaves only once the record is
   * durable (the object's output gate holds it until the commit is confirmed).
   */
  writeSettled(callId: string): Promise<void> {
    this.unwritten.add(callId);
    const issued = new Promise<void>((resolve) => this.waitingForWrite.push(resolve));
    this.writeTimer ??= setTimeout(() => {
      this.writeTimer = null;
      this.writeUnwritten();
    }, settlementWriteMs);
    return issued;
  }

  /** A call in flight was settled or abandoned: a read waiting for settlements looks again. */
  callLeftFlight(): void {
    const waiting = this.waitingForSettlement;
    this.waitingForSettlement = [];
    for (const release of waiting) release();
  }

  /** Waits, up to `ms`, until no call is in flight (each settlement that arrives meanwhile ends a wait). */
  async settlementsWithin(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while ([...this.calls.values()].some((call) => call.state === 'in_flight')) {
      const left = until - Date.now();
      if (left <= 0) return;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        this.waitingForSettlement.push(resolve);
        timer = setTimeout(resolve, left);
      });
      clearTimeout(timer);
    }
  }

  /** Writes the settled records waiting for a write now, in a write of their own. */
  writeUnwritten(): void {
    const entries = this.withSettled({});
    if (Object.keys(entries).length > 0) void this.ctx.storage.put(entries);
  }

  /**
   * `entries` to put, with the records of the settled calls not written yet (a call flushed
   * meanwhile has left the storage with the flush's delete). Call it in the very expression that
   * puts them: those waiting on the write are released when it is issued.
   */
  withSettled(entries: Record<string, unknown>): Record<string, unknown> {
    for (const callId of this.unwritten) {
      const call = this.calls.get(callId);
      if (call !== undefined) entries[`call:${callId}`] = call;
    }
    this.unwritten.clear();
    if (this.writeTimer !== null) clearTimeout(this.writeTimer);
    this.writeTimer = null;
    const waiting = this.waitingForWrite;
    this.waitingForWrite = [];
    for (const release of waiting) release();
    return entries;
  }

  /** Keeps a request-log row of a call that leaves no booking, for the next flush to write. */
  async keepLog(row: CallLogRow): Promise<void> {
    this.logs.set(row.id, row);
    await this.ctx.storage.put(`log:${row.id}`, row);
  }

  /**
   * The lease holds money, call slots (counted in the end user's window)
   * or part of a developer key's budget.
   */
  holdsLease(): boolean {
    const { lease } = this.meta;
    return lease.units > 0n || (lease.rate?.slots ?? 0) > 0 || Object.keys(lease.budgets ?? {}).length > 0;
  }

  leaseTtlSeconds(): number {
    return 2 * callLimits(this.env).holdTtlSeconds;
  }

  adoptDatabaseUrl(url: string | undefined): void {
    if (this.env.ENVIRONMENT !== 'test' || this.env.DATABASE_URL || url === undefined || url === this.meta.databaseUrl) return;
    this.meta = { ...this.meta, databaseUrl: url };
    this.database = null;
  }

  /**
   * Its statements go over Neon's HTTP query endpoint: one round trip each, with no connection to
   * open first — a cold object's first statement costs what a warm one's does.
   */
  openDatabase(): SqlDatabase {
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
export function claimUntil(call: StoredCall): number {
  return call.rating.authorizedAt + claimTtlMs;
}
