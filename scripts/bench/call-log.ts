/**
 * Request-log benchmark (docs/request-log.md): `listCalls`, the statement behind
 * `GET /v1/developer/calls`, over 1,000,000 calls of four developers and their usage records, on a
 * fresh embedded PostgreSQL. Each filtered page a developer typically asks for is timed beside the
 * reference of the same run: a plain read of an app's newest 20 rows through its index, no join.
 * Target: a filtered page at most 50 ms p50.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { type CallFilters, listCalls } from '#shared/calls/list-calls.ts';
import { migrate } from '../lib/migrate.ts';
import { freePort } from '../lib/ports.ts';
import { ensureDatabase, startPostgres } from '../lib/postgres.ts';
import { type CallLogFixture, createCallLogFixture, insertCalls } from './call-log-data.ts';

const CALLS = 1_000_000;
const DAYS = 30;
const RUNS = 40;
const PAGE = 20;
const TARGET_MS = 50;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function timeEach(count: number, run: () => Promise<unknown>): Promise<number[]> {
  const durations: number[] = [];
  for (let index = 0; index < count; index++) {
    const started = performance.now();
    await run();
    durations.push(performance.now() - started);
  }
  return durations.sort((a, b) => a - b);
}

async function seconds<T>(run: () => Promise<T>): Promise<[T, string]> {
  const started = performance.now();
  const result = await run();
  return [result, `${((performance.now() - started) / 1000).toFixed(1)} s`];
}

export async function runCallLogBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'faucet-call-log-bench-'));
  const postgres = await startPostgres({ dataDir: join(dir, 'data'), port: await freePort() });
  try {
    await ensureDatabase(postgres.url('postgres'), 'call_log_bench');
    const url = postgres.url('call_log_bench');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await migrate(client);
      const fixture = await createCallLogFixture(client);
      const [written, generated] = await seconds(async () => {
        // Bulk load: foreign-key checks and triggers off for this one session.
        await client.query('set session_replication_role = replica');
        const result = await insertCalls(client, CALLS, DAYS);
        await client.query('set session_replication_role = origin');
        return result;
      });
      // As production's tables are between writes: vacuumed (visibility map) and analysed.
      const [, vacuumed] = await seconds(() => client.query('vacuum analyze gateway_call_log, usage_events, end_users, apps'));
      const { rows: shares } = await client.query<{ mine: string; small: string }>(
        `select count(*) filter (where a.developer_id = $1) as mine, count(*) filter (where a.developer_id = $2) as small
           from gateway_call_log l join apps a on a.id = l.app_id`,
        [fixture.developerId, fixture.smallDeveloperId],
      );
      const [load] = loadavg();
      console.log(
        `${written.calls} calls of 5 developers over ${DAYS} days (${shares[0]!.mine} of the measured developer's 4 apps, ` +
          `${shares[0]!.small} of the smallest developer) + ${written.usageRecords} usage records, generated in ${generated}, ` +
          `vacuum analyze ${vacuumed}; embedded PostgreSQL 18, node-postgres on the same machine, ${cpus().length} CPUs, load ${load?.toFixed(1)}`,
      );

      await measureCallLog(client, fixture);
    } finally {
      await client.end();
    }
  } finally {
    await postgres.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The pages of the request log, timed in interleaved rounds beside the reference. */
async function measureCallLog(client: pg.Client, fixture: CallLogFixture): Promise<void> {
  const db = drizzle(client);
  const page = (filters: CallFilters, cursor?: string, developerId = fixture.developerId) =>
    listCalls(db, { developerId, filters, limit: PAGE, cursor });
  const appId = fixture.appIds[0]!;
  const first = await page({ appId });
  if (first.rows.length !== PAGE || first.nextCursor === null) throw new Error('the newest page of the app is not full');
  const second = await page({ appId }, first.nextCursor);
  const last = first.rows.at(-1)!;
  if (second.rows.length !== PAGE || second.rows.some((row) => row.created_at > last.created_at || row.id === last.id)) {
    throw new Error('page 2 does not follow page 1');
  }
  const { rows: picked } = await client.query<{ client_request_id: string; created_at: Date }>(
    `select client_request_id, created_at from gateway_call_log where app_id = $1 order by created_at limit 1 offset 5000`,
    [fixture.appIds[2]],
  );
  const requestId = picked[0]!.client_request_id;
  const dayTo = new Date(Date.now() - 10 * 86_400_000);
  const day = { from: new Date(dayTo.getTime() - 86_400_000).toISOString(), to: dayTo.toISOString() };

  const reference = () =>
    client.query(`select * from gateway_call_log where app_id = $1 order by created_at desc, id desc limit ${PAGE}`, [appId]);
  const cases: Array<[label: string, run: () => Promise<{ rows: unknown[] }>, expected: (rows: number) => boolean]> = [
    ['newest page of an app', () => page({ appId }), (rows) => rows === PAGE],
    ['page 2 of an app (cursor)', () => page({ appId }, first.nextCursor!), (rows) => rows === PAGE],
    ['newest page, all apps', () => page({}), (rows) => rows === PAGE],
    ["one end user's calls (user_ref)", () => page({ endUserIds: [fixture.heavyEndUserId] }), (rows) => rows === PAGE],
    ['outcome=upstream_error', () => page({ outcome: 'upstream_error' }), (rows) => rows === PAGE],
    ['outcome=estimated', () => page({ outcome: 'estimated' }), (rows) => rows === PAGE],
    ['request_id (no app)', () => page({ requestId }), (rows) => rows >= 1],
    ['request_id + app', () => page({ requestId, appId: fixture.appIds[2]! }), (rows) => rows >= 1],
    ['model=claude-3-5-haiku-latest', () => page({ model: 'claude-3-5-haiku-latest' }), (rows) => rows === PAGE],
    ['model=mock:echo + app', () => page({ model: 'mock:echo', appId }), (rows) => rows === PAGE],
    ['1-day range, 10 days ago', () => page(day), (rows) => rows === PAGE],
    ['1-day range + app + code', () => page({ ...day, appId, errorCode: 'rate_limited' }), (rows) => rows === PAGE],
    ['smallest developer, newest page', () => page({}, undefined, fixture.smallDeveloperId), (rows) => rows === PAGE],
    [
      'smallest developer, outcome=refused',
      () => page({ outcome: 'refused' }, undefined, fixture.smallDeveloperId),
      (rows) => rows === PAGE,
    ],
  ];
  for (const [label, run, expected] of cases) {
    const { rows } = await run();
    if (!expected(rows.length)) throw new Error(`${label}: ${rows.length} rows`);
  }

  await timeEach(5, reference);
  for (const [, run] of cases) await timeEach(3, run);
  // Interleaved: each round times the reference and every case once, so load shifts hit all alike.
  const timings = new Map<string, number[]>([['reference', []], ...cases.map(([label]) => [label, []] as [string, number[]])]);
  for (let round = 0; round < RUNS; round++) {
    timings.get('reference')!.push(...(await timeEach(1, reference)));
    for (const [label, run] of cases) timings.get(label)!.push(...(await timeEach(1, run)));
  }
  const sorted = (label: string) => timings.get(label)!.sort((a, b) => a - b);
  const floor = percentile(sorted('reference'), 50);
  console.log(`-- ${RUNS} interleaved rounds, pages of ${PAGE}, the statement's time at the client (one connection)`);
  console.log(
    `reference: an app's newest ${PAGE} rows by its index, no join`.padEnd(60) +
      `p50 ${floor.toFixed(2)} ms  p95 ${percentile(sorted('reference'), 95).toFixed(2)} ms`,
  );
  let missed = 0;
  for (const [label] of cases) {
    const times = sorted(label);
    const p50 = percentile(times, 50);
    if (p50 > TARGET_MS) missed += 1;
    console.log(
      `listCalls: ${label}`.padEnd(60) +
        `p50 ${p50.toFixed(2)} ms  p95 ${percentile(times, 95).toFixed(2)} ms  ${(p50 / floor).toFixed(1)}x the reference  ` +
        (p50 <= TARGET_MS ? 'met' : 'MISS'),
    );
  }
  console.log(`target: a filtered page <= ${TARGET_MS} ms p50: ${missed === 0 ? 'met by every page' : `MISSED by ${missed}`}`);
}
