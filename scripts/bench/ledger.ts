/**
 * Ledger benchmark: usage bookings per second against a fresh embedded PostgreSQL, from one client
 * and from 16 concurrent writers, for a plain booking and for the platform route's hold + settle.
 * Each writer books for its own end users; all bookings credit the same developer and platform
 * accounts, the hot rows of the ledger. Round trips are counted at the database handle.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SQL } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { bookUsage, creditTestBalance, reconcileLedger, reserveHold, type LedgerDatabase } from '../../workers/shared/ledger/index.ts';
import { parseWireAmount } from '../../workers/shared/money/index.ts';
import { rateUsage } from '../../workers/shared/rating/index.ts';
import { migrate } from '../lib/migrate.ts';
import { freePort } from '../lib/ports.ts';
import { ensureDatabase, startPostgres, withClient } from '../lib/postgres.ts';
import { seed } from '../lib/seed.ts';

const WRITERS = 16;
const SEQUENTIAL_BOOKINGS = 1_000;
const BOOKINGS_PER_WRITER = 250;

/** A database handle that counts the statements sent (one statement = one round trip). */
function counting(db: LedgerDatabase): LedgerDatabase & { roundTrips: number } {
  const counted = {
    roundTrips: 0,
    execute(query: SQL) {
      counted.roundTrips += 1;
      return db.execute(query);
    },
  };
  return counted;
}

interface Fixture {
  appId: string;
  endUserIds: string[];
}

/** End users of the app, each funded with 1000 USD through a balanced top-up. */
async function createUsers(client: pg.Client, appId: string, count: number): Promise<string[]> {
  const { rows } = await client.query<{ end_user_id: string; wallet_id: string }>(
    `with users as (
       insert into end_users (app_id, external_user_hash)
       select $1, 'bench-' || gen_random_uuid() from generate_series(1, $2) returning id)
     insert into wallets (kind, end_user_id) select 'user', id from users returning end_user_id, id as wallet_id`,
    [appId, count],
  );
  const db = drizzle(client);
  for (const row of rows) {
    await creditTestBalance(db, { walletId: row.wallet_id, amount: parseWireAmount('1000.00000000'), requestId: 'bench-funding' });
  }
  return rows.map((row) => row.end_user_id);
}

const rated = rateUsage({ routeMode: 'platform', provider: 'mock', model: 'echo', inputTokens: 800, outputTokens: 200, estimated: false });
const worstCase = parseWireAmount('0.01000000');

async function book(db: LedgerDatabase, fixture: Fixture, endUserId: string, requestId: string, withHold: boolean): Promise<void> {
  if (withHold) {
    const hold = await reserveHold(db, { endUserId, requestId, amount: worstCase });
    if (hold.outcome !== 'reserved') throw new Error(`hold not reserved: ${hold.outcome}`);
  }
  const result = await bookUsage(db, { requestId, appId: fixture.appId, endUserId, featureKey: 'chat', rated });
  if (result.outcome !== 'booked') throw new Error(`booking not booked: ${result.outcome}`);
}

interface Measurement {
  bookings: number;
  seconds: number;
  roundTrips: number;
}

async function measure(
  pool: pg.Pool,
  fixture: Fixture,
  label: string,
  writers: number,
  perWriter: number,
  withHold: boolean,
): Promise<Measurement> {
  const db = counting(drizzle(pool));
  const started = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      const endUserId = fixture.endUserIds[writer % fixture.endUserIds.length]!;
      for (let index = 0; index < perWriter; index++) {
        await book(db, fixture, endUserId, `${label}-${writer}-${index}`, withHold);
      }
    }),
  );
  return { bookings: writers * perWriter, seconds: (performance.now() - started) / 1000, roundTrips: db.roundTrips };
}

function print(label: string, result: Measurement): void {
  const perSecond = Math.round(result.bookings / result.seconds);
  const roundTrips = (result.roundTrips / result.bookings).toFixed(2);
  console.log(`${label.padEnd(44)} ${String(perSecond).padStart(6)} bookings/s  ${roundTrips} round trips/booking  (${result.bookings} in ${result.seconds.toFixed(2)} s)`);
}

export async function runLedgerBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'faucet-ledger-bench-'));
  const postgres = await startPostgres({ dataDir: join(dir, 'data'), port: await freePort() });
  try {
    await ensureDatabase(postgres.url('postgres'), 'ledger_bench');
    const url = postgres.url('ledger_bench');
    const fixture = await withClient(url, async (client) => {
      await migrate(client);
      const seeded = await seed(client, { developerKey: 'fdk_bench_key_0123456789abcdef', sessionHashSecret: 'bench-secret' });
      return { appId: seeded.appId, endUserIds: await createUsers(client, seeded.appId, WRITERS) };
    });
    const pool = new pg.Pool({ connectionString: url, max: WRITERS });
    pool.on('error', () => {});
    try {
      // Warm up connections and plans.
      await measure(pool, fixture, 'warmup', WRITERS, 10, true);
      console.log('embedded PostgreSQL 18, client on the same machine (node-postgres pool)');
      print('usage booking, 1 writer', await measure(pool, fixture, 'seq', 1, SEQUENTIAL_BOOKINGS, false));
      print(`usage booking, ${WRITERS} writers`, await measure(pool, fixture, 'par', WRITERS, BOOKINGS_PER_WRITER, false));
      print('hold + settle (platform route), 1 writer', await measure(pool, fixture, 'hseq', 1, SEQUENTIAL_BOOKINGS, true));
      print(`hold + settle (platform route), ${WRITERS} writers`, await measure(pool, fixture, 'hpar', WRITERS, BOOKINGS_PER_WRITER, true));
      const report = await reconcileLedger(drizzle(pool));
      console.log(
        `reconciliation after the run: ${report.ok ? 'ok' : 'MISMATCH'} (${report.counts.transactions} transactions, ${report.counts.entries} entries)`,
      );
      if (!report.ok) throw new Error('ledger does not reconcile after the benchmark');
    } finally {
      await pool.end();
    }
  } finally {
    await postgres.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
