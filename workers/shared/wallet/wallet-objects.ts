/**
 * The API's view of the wallet objects (docs/edge.md): which exist is known from the leases they hold
 * in Postgres (`lease:<wallet object name>`), so an operator can ask every one of them what it holds
 * unflushed — reconciliation counts it, so the books are exact at any instant — or have them all book
 * what they settled now (before an audit or a period close).
 */
import { sql } from 'drizzle-orm';
import type { WalletSnapshot } from '../durable-objects.ts';
import type { Env } from '../env.ts';
import { queryRows, type SqlDatabase } from '../query.ts';
import { addUsd, formatUsd, parseDatabaseAmount, zeroUsd } from '../money/index.ts';
import { LEASE_KEY_PREFIX } from './settle-lease.ts';

export interface WalletObjectsSummary {
  /** Objects asked: those holding a lease, or whose lease ended in the last day (one may still hold calls). */
  objects: number;
  /** Objects that did not answer (their figures are missing from the sums). */
  unreachable: number;
  in_flight_calls: number;
  unflushed_calls: number;
  /** Charged to users, kept in the objects, not yet booked. */
  unflushed_usd: string;
  /**
   * Settlements the ledger refused, kept in their objects (none by construction — each is an incident:
   * the call's record, when written, stays in flight and the sweeper books it at its bound).
   */
  refused_calls: number;
}

/** At most this many objects asked at once. */
const parallel = 16;

/**
 * The objects to ask. Every statement an object runs moves its lease's expiry forward, so an object
 * whose lease expired (Postgres was unreachable) or was released (a recall) in the last day is asked
 * too: it may still keep calls its next alarm will book.
 */
export async function leasingObjectNames(db: SqlDatabase): Promise<string[]> {
  const rows = await queryRows<{ request_id: string }>(
    db,
    sql`select request_id from balance_holds
         where request_id like ${`${LEASE_KEY_PREFIX}%`} and expires_at > now() - interval '1 day'
         order by request_id limit 10000`,
  );
  return rows.map((row) => row.request_id.slice(LEASE_KEY_PREFIX.length)).filter((name) => /^[0-9a-f]{32}$/.test(name));
}

async function askAll(env: Env, db: SqlDatabase, ask: (name: string) => Promise<WalletSnapshot>): Promise<WalletObjectsSummary> {
  const summary = { objects: 0, unreachable: 0, in_flight_calls: 0, unflushed_calls: 0, refused_calls: 0 };
  let unflushed = zeroUsd();
  if (env.WALLET === undefined) return { ...summary, unflushed_usd: formatUsd(unflushed) };
  const names = await leasingObjectNames(db);
  summary.objects = names.length;
  for (let start = 0; start < names.length; start += parallel) {
    const answers = await Promise.allSettled(names.slice(start, start + parallel).map(ask));
    for (const answer of answers) {
      if (answer.status === 'rejected') {
        summary.unreachable += 1;
        continue;
      }
      summary.in_flight_calls += answer.value.inFlight;
      summary.unflushed_calls += answer.value.unflushed;
      summary.refused_calls += answer.value.refused;
      unflushed = addUsd(unflushed, parseDatabaseAmount(answer.value.unflushedUsd));
    }
  }
  return { ...summary, unflushed_usd: formatUsd(unflushed) };
}

const objectNamed = (env: Env, name: string) => {
  const namespace = env.WALLET as NonNullable<Env['WALLET']>;
  return namespace.get(namespace.idFromName(name));
};

/** What every leasing object holds right now. */
export function walletObjectsSummary(env: Env, db: SqlDatabase): Promise<WalletObjectsSummary> {
  return askAll(env, db, (name) => objectNamed(env, name).snapshot());
}

/** Every leasing object books what it settled now; the summary is what they hold after (unflushed: a flush failed). */
export function flushWalletObjects(env: Env, db: SqlDatabase): Promise<WalletObjectsSummary> {
  return askAll(env, db, (name) => objectNamed(env, name).flush());
}
