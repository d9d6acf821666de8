/**
 * Developer usage benchmark: GET /v1/developer/usage for a 90-day range over
 * 1,000,000 usage events of one developer, through the API worker of the whole local stack (wrangler
 * dev, embedded PostgreSQL, proxy). The events are generated inside PostgreSQL and folded into the
 * rollup by the cron's own function; the floor is `GET /health` of the same worker, the reference the
 * brute-force aggregate of the raw events the rollup replaces, timed on the same database.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { queryDeveloperUsage } from '#shared/usage/developer-usage.ts';
import { rollUpUsage } from '#shared/usage/roll-up-usage.ts';
import { generateSecrets } from '../lib/dev-vars.ts';
import { repoRoot, startStack } from '../lib/stack.ts';
import { createUsageFixture, insertUsageEvents } from './usage-data.ts';

const EVENTS = 1_000_000;
const DAYS = 90;
const RUNS = 30;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const figures = (sorted: number[]) => `p50 ${percentile(sorted, 50).toFixed(1)} ms  p95 ${percentile(sorted, 95).toFixed(1)} ms`;

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

/** The question the endpoint answers, asked of the raw events: what the rollup spares every request. */
const rawScan = `
  select (e.created_at at time zone $2)::date as day, a.public_app_id, e.feature_key, e.model, e.provider, e.route_mode,
         count(*) as calls, sum(e.input_tokens) as input_tokens, sum(e.output_tokens) as output_tokens,
         sum(e.retail_usd) as retail_usd, sum(e.developer_revenue_usd) as developer_revenue_usd,
         sum(e.upstream_cost_usd) as upstream_cost_usd
    from usage_events e join apps a on a.id = e.app_id
   where a.developer_id = $1 and e.created_at >= ($3::date::timestamp at time zone $2)
     and e.created_at < (($4::date + 1)::timestamp at time zone $2)
   group by 1, 2, 3, 4, 5, 6`;

export async function runDeveloperUsageBench(): Promise<void> {
  const tmp = join(repoRoot, '.faucet', 'tmp');
  mkdirSync(tmp, { recursive: true });
  const dir = mkdtempSync(join(tmp, 'usage-bench-'));
  const stack = await startStack({
    stateDir: dir,
    secrets: generateSecrets(),
    workerVars: { API_RATE_LIMIT_MAX_REQUESTS: '0', GATEWAY_RATE_LIMIT_MAX_REQUESTS: '0', LOG_LEVEL: 'error' },
  });
  const client = new pg.Client(stack.databaseUrl);
  await client.connect();
  try {
    const fixture = await createUsageFixture(client, stack.seed.developerId);
    const [, generated] = await seconds(async () => {
      // Bulk load: foreign-key checks and the queueing trigger off for this one session, then the
      // events are queued exactly as the trigger would have queued them.
      await client.query('set session_replication_role = replica');
      await insertUsageEvents(client, fixture, EVENTS, DAYS);
      await client.query('set session_replication_role = origin');
      await client.query(
        `insert into usage_rollup_pending (usage_event_id, app_id, created_at)
         select id, app_id, created_at from usage_events where app_id = any($1::uuid[])`,
        [fixture.appIds],
      );
    });
    const [folded, foldTime] = await seconds(() => rollUpUsage(drizzle(client)));
    // The fold deleted a million pending rows; autovacuum would clear them soon after (as it does after
    // each cron fold), and until it does every read walks their dead index entries (~10 ms here).
    await client.query('vacuum usage_rollup_pending');
    await client.query('analyze');
    const { rows: sizes } = await client.query<{ rollup_rows: string; pending: string }>(
      `select (select count(*) from usage_rollup_daily) as rollup_rows, (select count(*) from usage_rollup_pending) as pending`,
    );
    const to = new Date().toISOString().slice(0, 10);
    const from = new Date(Date.parse(`${to}T00:00:00Z`) - (DAYS - 1) * 86_400_000).toISOString().slice(0, 10);
    const [load] = loadavg();
    console.log(
      `${EVENTS} usage events of one developer over ${DAYS} days (${fixture.appIds.length} apps x 3 features x 4 models x 3 routes), generated in ${generated}; ` +
        `folded by faucet_roll_up_usage in ${foldTime} (${folded} events -> ${sizes[0]!.rollup_rows} rollup rows, ${sizes[0]!.pending} pending); ` +
        `${cpus().length} CPUs, load ${load?.toFixed(1)}`,
    );

    const get = async (path: string, token?: string) => {
      const response = await fetch(`${stack.apiUrl}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
      if (!response.ok) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
      return response.json() as Promise<{ totals?: { calls: number }; data?: unknown[] }>;
    };
    const usagePath = (tz: string) => `/v1/developer/usage?from=${from}&to=${to}&tz=${encodeURIComponent(tz)}&limit=100`;
    const { rows: reference } = await client.query<{ calls: string }>(`select sum(calls) as calls from (${rawScan}) r`, [
      stack.seed.developerId,
      'UTC',
      from,
      to,
    ]);
    const answer = await get(usagePath('UTC'), stack.developerKey);
    if (answer.totals?.calls !== Number(reference[0]!.calls)) {
      throw new Error(`the endpoint counted ${answer.totals?.calls} calls, the raw events ${reference[0]!.calls}`);
    }

    await timeEach(5, () => get('/health'));
    const floor = await timeEach(RUNS, () => get('/health'));
    console.log(`-- over HTTP through wrangler dev (workerd), the whole local stack, ${RUNS} sequential requests each`);
    console.log(`GET /health (HTTP + worker floor)                         ${figures(floor)}`);
    for (const [tz, runs] of [
      ['UTC', RUNS],
      ['America/New_York', RUNS],
      ['Asia/Kolkata', 10],
    ] as const) {
      await timeEach(3, () => get(usagePath(tz), stack.developerKey));
      const timed = await timeEach(runs, () => get(usagePath(tz), stack.developerKey));
      console.log(`GET /v1/developer/usage ${DAYS} days, tz=${tz.padEnd(16)} ${figures(timed)}${runs < RUNS ? `  (${runs} runs)` : ''}`);
    }
    // The same page's statement(s) alone, from Node on the same database: what of the endpoint's time is SQL.
    const db = drizzle(client);
    for (const tz of ['UTC', 'America/New_York', 'Asia/Kolkata']) {
      const statement = () => queryDeveloperUsage(db, { developerId: stack.seed.developerId, from, to, timeZone: tz, limit: 100 });
      await timeEach(3, statement);
      console.log(
        `  its statement alone (queryDeveloperUsage, node-postgres), tz=${tz.padEnd(16)} ${figures(await timeEach(RUNS, statement))}`,
      );
    }
    // The worker opens a connection (a new backend, cold caches) per request: the same, from Node.
    const onFreshConnection = async (run: (fresh: pg.Client) => Promise<unknown>) => {
      const fresh = new pg.Client(stack.databaseUrl);
      await fresh.connect();
      try {
        await run(fresh);
      } finally {
        await fresh.end();
      }
    };
    const connectOnly = await timeEach(10, () => onFreshConnection((fresh) => fresh.query('select 1')));
    const coldStatement = await timeEach(10, () =>
      onFreshConnection((fresh) =>
        queryDeveloperUsage(drizzle(fresh), { developerId: stack.seed.developerId, from, to, timeZone: 'UTC', limit: 100 }),
      ),
    );
    console.log(`  connect + select 1 on a new connection                                ${figures(connectOnly)}  (10 runs)`);
    console.log(`  connect + the statement on a new connection (cold backend), tz=UTC    ${figures(coldStatement)}  (10 runs)`);
    const raw = await timeEach(5, () => client.query(rawScan, [stack.seed.developerId, 'UTC', from, to]));
    const api = await timeEach(RUNS, () => get(usagePath('UTC'), stack.developerKey));
    console.log(
      `reference: the same aggregate over the raw events (SQL only, no HTTP), tz=UTC   ${figures(raw)}  (5 runs); ` +
        `the endpoint answers ${(percentile(raw, 50) / percentile(api, 50)).toFixed(0)}x faster at p50, HTTP included`,
    );
  } finally {
    await client.end();
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
