/**
 * Usage events for the developer-usage benchmark, generated inside PostgreSQL (one
 * `insert … select generate_series`): a developer with several apps, features, models and routes, end
 * users with valid foreign keys, and events spread evenly over the last `days` days with amounts that
 * add up as a booking's would (retail = upstream payable + developer revenue + platform share).
 */
import type pg from 'pg';

export interface UsageFixture {
  developerId: string;
  appIds: string[];
  publicAppIds: string[];
}

const APPS = 3;
const FEATURES = ['chat', 'summarise', 'translate'];
const MODELS = [
  ['openai', 'gpt-4o-mini'],
  ['openai', 'gpt-4o'],
  ['anthropic', 'claude-3-5-haiku-latest'],
  ['mock', 'echo'],
];
const ROUTES = ['platform', 'developer_key', 'byok'];
const END_USERS_PER_APP = 50;

/** Apps (each with the features above) and end users for `developerId`. */
export async function createUsageFixture(client: pg.Client, developerId: string): Promise<UsageFixture> {
  const { rows } = await client.query<{ id: string; public_app_id: string }>(
    `insert into apps (developer_id, public_app_id, name)
     select $1, 'app_bench_usage_' || n || '_' || substr(md5(random()::text), 1, 8), 'Usage bench app ' || n
       from generate_series(1, $2::integer) n
     returning id, public_app_id`,
    [developerId, APPS],
  );
  const appIds = rows.map((row) => row.id);
  await client.query(
    `insert into app_features (app_id, feature_key, name, default_model)
     select a, f, f, 'mock:echo' from unnest($1::uuid[]) a, unnest($2::text[]) f`,
    [appIds, FEATURES],
  );
  await client.query(
    `insert into end_users (app_id, external_user_hash)
     select a, 'bench-usage-' || n || '-' || a from unnest($1::uuid[]) a, generate_series(1, $2::integer) n`,
    [appIds, END_USERS_PER_APP],
  );
  return { developerId, appIds, publicAppIds: rows.map((row) => row.public_app_id) };
}

/** `count` usage events of the fixture's apps over the last `days` days, ending an hour ago. */
export async function insertUsageEvents(client: pg.Client, fixture: UsageFixture, count: number, days: number): Promise<void> {
  await client.query(
    `with users as (
       select app_id, array_agg(id order by id) as ids from end_users where app_id = any($1::uuid[]) group by app_id),
     apps as (select app_id, row_number() over (order by app_id) - 1 as n, ids from users)
     insert into usage_events (request_id, app_id, end_user_id, feature_key, route_mode, provider, model, input_tokens,
                               output_tokens, upstream_cost_usd, retail_usd, developer_revenue_usd, platform_share_usd, created_at)
     select 'bench-usage-' || g, a.app_id, a.ids[1 + (g / 7) % array_length(a.ids, 1)],
            ($2::text[])[1 + (g / 3) % cardinality($2::text[])],
            ($5::text[])[1 + (g / 11) % cardinality($5::text[])],
            ($3::text[])[1 + (g / 5) % cardinality($3::text[])],
            ($4::text[])[1 + (g / 5) % cardinality($4::text[])],
            t.input_tokens, t.output_tokens,
            t.upstream, t.upstream + t.developer + t.platform, t.developer, t.platform,
            now() - interval '1 hour' - ($6::integer * interval '1 day') * (g::float8 / $7::integer)
       from generate_series(1, $7::integer) g
       join apps a on a.n = g % $8::integer
       cross join lateral (
         select 200 + (g * 37) % 1800 as input_tokens, 20 + (g * 13) % 500 as output_tokens,
                ((g % 997) * 0.00000731)::numeric(20, 8) as upstream, ((g % 89) * 0.00000411)::numeric(20, 8) as developer,
                ((g % 61) * 0.00000173)::numeric(20, 8) as platform) t`,
    [
      fixture.appIds,
      FEATURES,
      MODELS.map(([provider]) => provider),
      MODELS.map(([, model]) => model),
      ROUTES,
      days,
      count,
      fixture.appIds.length,
    ],
  );
}
