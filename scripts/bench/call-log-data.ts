/**
 * Request-log rows for the call-log benchmark, generated inside PostgreSQL (one `insert … select
 * generate_series` per table): one developer with four apps holding 60% of the calls, three others
 * with two apps each and a small one (0.2%); end users per app of whom a few make most calls; calls
 * over the last 30 days, written in the order they happened (as the flushes append them), with
 * outcomes, surfaces, models and routes in production-like shares; and a usage record
 * (`request_id = 'call:<id>'`) for every answered or cut call, its amounts adding up as a booking's
 * would (retail = upstream + developer revenue + platform share).
 */
import type pg from 'pg';

export interface CallLogFixture {
  /** The developer the pages are read for, their apps (largest first) and the busiest end user of the first. */
  developerId: string;
  appIds: string[];
  heavyEndUserId: string;
  /** A developer with 0.2% of the calls. */
  smallDeveloperId: string;
}

/** Apps per developer and each app's share of the calls, in slots of 1/500; the last developer is small (0.2%). */
const DEVELOPERS = [
  { apps: [120, 90, 60, 30], endUsersPerApp: 2_000 },
  { apps: [50, 40], endUsersPerApp: 500 },
  { apps: [40, 30], endUsersPerApp: 500 },
  { apps: [25, 14], endUsersPerApp: 200 },
  { apps: [1], endUsersPerApp: 50 },
];
const SLOTS = DEVELOPERS.flatMap((developer) => developer.apps).reduce((sum, share) => sum + share, 0);

/** Models as clients name them, with the provider and model that answer, in slots of 1/20. */
const MODELS: Array<[requested: string, provider: string, model: string, slots: number]> = [
  ['gpt-4o-mini', 'openai', 'gpt-4o-mini', 7],
  ['openai:gpt-4o', 'openai', 'gpt-4o', 4],
  ['claude-3-5-haiku-latest', 'anthropic', 'claude-3-5-haiku-20241022', 3],
  ['anthropic:claude-sonnet-4-5', 'anthropic', 'claude-sonnet-4-5', 2],
  ['gemini-2.5-flash', 'google', 'gemini-2.5-flash', 2],
  ['text-embedding-3-small', 'openai', 'text-embedding-3-small', 1],
  ['mock:echo', 'mock', 'echo', 1],
];
const modelSlots = MODELS.flatMap((model, index) => Array<number>(model[3]).fill(index + 1));

export async function createCallLogFixture(client: pg.Client): Promise<CallLogFixture> {
  const developerIds: string[] = [];
  const appIds: string[][] = [];
  await client.query('create temporary table bench_app_slots (slot integer primary key, app_id uuid not null, users uuid[] not null)');
  let slot = 0;
  for (const [index, developer] of DEVELOPERS.entries()) {
    const { rows } = await client.query<{ id: string }>(`insert into developers (name, email) values ($1, $2) returning id`, [
      `Call log bench ${index}`,
      `call-log-bench-${index}@faucet.local`,
    ]);
    developerIds.push(rows[0]!.id);
    const apps: string[] = [];
    for (const [appIndex, share] of developer.apps.entries()) {
      const { rows: app } = await client.query<{ id: string }>(
        `insert into apps (developer_id, public_app_id, name) values ($1, $2, $3) returning id`,
        [rows[0]!.id, `app_bench_calls_${index}_${appIndex}`, `Call log bench app ${index}.${appIndex}`],
      );
      const appId = app[0]!.id;
      apps.push(appId);
      await client.query(
        `insert into app_features (app_id, feature_key, name, default_model)
         select $1, f, f, 'mock:echo' from unnest(array['chat', 'summarise', 'translate']) f`,
        [appId],
      );
      // The app's end users in id order: the generator below picks low positions far more often.
      await client.query(
        `with users as (
           insert into end_users (app_id, external_user_hash)
           select $1::uuid, 'bench-calls-' || n || '-' || $1::text from generate_series(1, $2::integer) n returning id)
         insert into bench_app_slots (slot, app_id, users)
         select s, $1::uuid, (select array_agg(id order by id) from users) from generate_series($3::integer, $4::integer) s`,
        [appId, developer.endUsersPerApp, slot + 1, slot + share],
      );
      slot += share;
    }
    appIds.push(apps);
  }
  const { rows } = await client.query<{ id: string }>(`select users[1] as id from bench_app_slots where app_id = $1`, [appIds[0]![0]]);
  return { developerId: developerIds[0]!, appIds: appIds[0]!, heavyEndUserId: rows[0]!.id, smallDeveloperId: developerIds.at(-1)! };
}

/**
 * Runs `load` with the tables' secondary indexes dropped, then builds them again from their own
 * definitions (one sorted build each instead of a million random inserts).
 */
async function withIndexesRebuilt<T>(client: pg.Client, tables: string[], load: () => Promise<T>): Promise<T> {
  const { rows } = await client.query<{ name: string; definition: string }>(
    `select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as definition
       from pg_index i
      where i.indrelid = any($1::regclass[])
        and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid)`,
    [tables],
  );
  for (const index of rows) await client.query(`drop index ${index.name}`);
  const result = await load();
  await client.query(`set maintenance_work_mem = '256MB'`);
  for (const index of rows) await client.query(index.definition);
  await client.query('reset maintenance_work_mem');
  return result;
}

/**
 * `count` calls over the last `days` days (reproducible: a fixed seed), then the usage record of each
 * answered or cut call. Run with foreign-key checks and triggers off (session_replication_role).
 */
export function insertCalls(client: pg.Client, count: number, days: number): Promise<{ calls: number; usageRecords: number }> {
  return withIndexesRebuilt(client, ['gateway_call_log', 'usage_events'], () => generate(client, count, days));
}

async function generate(client: pg.Client, count: number, days: number): Promise<{ calls: number; usageRecords: number }> {
  await client.query('select setseed(0.19)');
  const calls = await client.query(
    `insert into gateway_call_log (id, app_id, end_user_id, feature_key, surface, requested_model, provider, model, route_mode,
                                   outcome, error_code, error_message, client_request_id, stream, authorize_ms, first_byte_ms,
                                   total_ms, created_at)
     select gen_random_uuid(), s.app_id, s.users[1 + floor(cardinality(s.users) * r.u ^ 3)::integer],
            (array['chat', 'chat', 'summarise', 'translate'])[1 + floor(r.f * 4)::integer],
            case when m.requested = 'text-embedding-3-small' then 'embeddings'
                 when r.f < 0.75 then 'chat.completions' when r.f < 0.9 then 'responses' else 'messages' end,
            m.requested, m.provider, m.model,
            (array['platform', 'platform', 'platform', 'platform', 'platform', 'platform', 'platform', 'developer_key',
                   'developer_key', 'byok'])[1 + floor(r.t * 10)::integer],
            o.outcome, o.code, case when o.code is null then null else 'bench: ' || o.code end,
            'req_' || substr(md5(r.g::text), 1, 24), r.f < 0.6, 1 + floor(r.t * 8)::integer,
            case when r.f < 0.6 then 150 + floor(r.u * 900)::integer end, 300 + floor(r.u * 9000)::integer,
            now() - $2::integer * interval '1 day' * (1 - r.g::float8 / $1::integer)
       from (select g, random() as a, random() as u, random() as f, random() as o, random() as mo, random() as t
               from generate_series(1, $1::integer) g) r
       join bench_app_slots s on s.slot = 1 + floor(r.a * $3::integer)::integer
       join (select ordinality as n, requested, provider, model
               from unnest($4::text[], $5::text[], $6::text[]) with ordinality as x(requested, provider, model)) m
         on m.n = ($7::integer[])[1 + floor(r.mo * cardinality($7::integer[]))::integer]
       cross join lateral (
         select case when r.o < 0.9 then 'answered' when r.o < 0.93 then 'cut' when r.o < 0.97 then 'upstream_error'
                     else 'refused' end as outcome,
                case when r.o < 0.93 then null when r.o < 0.95 then 'upstream_error' when r.o < 0.97 then 'upstream_timeout'
                     when r.o < 0.99 then 'insufficient_balance' else 'rate_limited' end as code) o`,
    [count, days, SLOTS, MODELS.map((model) => model[0]), MODELS.map((model) => model[1]), MODELS.map((model) => model[2]), modelSlots],
  );
  const usage = await client.query(
    `insert into usage_events (request_id, app_id, end_user_id, feature_key, route_mode, provider, model, input_tokens,
                               output_tokens, estimated, upstream_cost_usd, retail_usd, developer_revenue_usd,
                               platform_share_usd, client_request_id, created_at)
     select 'call:' || l.id, l.app_id, l.end_user_id, l.feature_key, l.route_mode, l.provider, l.model, t.input_tokens,
            t.output_tokens, t.n % 50 = 0, t.upstream, t.upstream + t.developer + t.platform, t.developer, t.platform,
            l.client_request_id, l.created_at
       from gateway_call_log l
       cross join lateral (select abs(hashtext(l.id::text)) as n) h
       cross join lateral (
         select h.n, 200 + h.n % 1800 as input_tokens, 20 + h.n % 500 as output_tokens,
                ((h.n % 997) * 0.00000731)::numeric(20, 8) as upstream, ((h.n % 89) * 0.00000411)::numeric(20, 8) as developer,
                ((h.n % 61) * 0.00000173)::numeric(20, 8) as platform) t
      where l.outcome in ('answered', 'cut')`,
  );
  return { calls: calls.rowCount ?? 0, usageRecords: usage.rowCount ?? 0 };
}
