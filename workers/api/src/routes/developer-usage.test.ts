/**
 * GET /v1/developer/usage against a brute-force aggregate of the raw usage_events: random events over a
 * DST week, some folded into the rollup and some not, in whole-hour, sub-hour and half-hour-DST zones;
 * pagination; bad parameters; and who may see what.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { rollUpUsage } from '#shared/usage/roll-up-usage.ts';
import { adminToken, api, call, createDatabase, createTestEnv, developerKey, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
type Body = Record<string, any>;
const world = {} as { developerId: string; key: string; apps: Array<{ id: string; publicAppId: string }>; demoAppId: string };

const onboard = async (email: string) => {
  const response = await call(api(), testEnv, '/v1/admin/developers', { json: { name: email, email }, token: adminToken });
  return (await response.json()) as Body;
};

/** A small deterministic generator, so a failure can be replayed. */
function random(seed: number) {
  let state = seed >>> 0;
  return (below: number) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % below;
  };
}

const features = ['chat', 'summarise'];
const models = [
  ['openai', 'gpt-4o-mini'],
  ['anthropic', 'claude-3-5-haiku-latest'],
];
const routes = ['platform', 'byok'];
const units = (value: number) => `${Math.floor(value / 1e8)}.${String(value % 1e8).padStart(8, '0')}`;
let eventCount = 0;

/** Events of the given apps at the given instants, random otherwise (the trigger queues them as pending). */
async function insertEvents(appIds: string[], instants: Date[], seed: number): Promise<void> {
  const next = random(seed);
  const rows = instants.map((at) => {
    const [provider, model] = models[next(models.length)]!;
    const developer = next(5_000_000);
    const platform = next(3_000_000);
    const upstream = next(9_000_000);
    eventCount += 1;
    return {
      request_id: `usage-test-${eventCount}-${seed}`,
      app_id: appIds[next(appIds.length)]!,
      feature_key: features[next(features.length)]!,
      route_mode: routes[next(routes.length)]!,
      provider,
      model,
      input_tokens: next(5000),
      output_tokens: next(900),
      upstream_cost_usd: units(upstream),
      retail_usd: units(upstream + developer + platform),
      developer_revenue_usd: units(developer),
      platform_share_usd: units(platform),
      created_at: at.toISOString(),
    };
  });
  await sql(
    testEnv,
    `insert into usage_events (request_id, app_id, feature_key, route_mode, provider, model, input_tokens, output_tokens,
                               upstream_cost_usd, retail_usd, developer_revenue_usd, platform_share_usd, created_at)
     select r.request_id, r.app_id, r.feature_key, r.route_mode, r.provider, r.model, r.input_tokens, r.output_tokens,
            r.upstream_cost_usd, r.retail_usd, r.developer_revenue_usd, r.platform_share_usd, r.created_at
       from json_populate_recordset(null::usage_events, $1::json) r`,
    [JSON.stringify(rows)],
  );
}

/** Random instants (millisecond precision) in [start, start + days). */
function instants(start: string, days: number, count: number, seed: number): Date[] {
  const next = random(seed);
  const base = Date.parse(start);
  return Array.from({ length: count }, () => new Date(base + next(days * 86_400) * 1000 + next(1000)));
}

/** What the endpoint must answer, computed the slow way: every raw event, grouped by its local day. */
async function bruteForce(tz: string, from: string, to: string, developerId: string) {
  const rows = await sql<Body>(
    testEnv,
    `select to_char(((e.created_at at time zone $1)::date)::timestamp, 'YYYY-MM-DD') as day, a.public_app_id, e.feature_key,
            e.model, e.provider, e.route_mode, count(*)::int as calls, sum(e.input_tokens)::int as input_tokens,
            sum(e.output_tokens)::int as output_tokens, sum(e.retail_usd)::numeric(20, 8)::text as retail_usd,
            sum(e.developer_revenue_usd)::numeric(20, 8)::text as developer_revenue_usd,
            sum(e.upstream_cost_usd)::numeric(20, 8)::text as upstream_cost_usd
       from usage_events e join apps a on a.id = e.app_id
      where a.developer_id = $4 and (e.created_at at time zone $1)::date between $2::date and $3::date
      group by 1, 2, 3, 4, 5, 6
      order by 1, a.public_app_id collate "C", e.feature_key collate "C", e.model collate "C", e.provider collate "C",
               e.route_mode collate "C"`,
    [tz, from, to, developerId],
  );
  return rows;
}

async function usage(query: string, token = world.key) {
  const response = await call(api(), testEnv, `/v1/developer/usage?${query}`, { token });
  return { status: response.status, body: (await response.json()) as Body, requestId: response.headers.get('x-request-id') };
}

/** Every page of a query, following next_cursor; checks that each page's totals are the same. */
async function walk(query: string, limit: number) {
  const rows: Body[] = [];
  let cursor: string | null = null;
  let totals: Body | undefined;
  for (let page = 0; page < 500; page++) {
    const { status, body } = await usage(`${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.data.length).toBeLessThanOrEqual(limit);
    if (totals) expect(body.totals).toEqual(totals);
    totals = body.totals;
    rows.push(...body.data);
    cursor = body.next_cursor;
    if (!cursor) return { rows, totals: totals! };
  }
  throw new Error('pagination did not end');
}

const pending = async () => Number((await sql<{ count: string }>(testEnv, 'select count(*) from usage_rollup_pending'))[0]!.count);
const fold = () => sql(testEnv, 'select faucet_roll_up_usage()');

const zones = ['UTC', 'America/New_York', 'Europe/Berlin', 'Asia/Kolkata', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'Pacific/Chatham'];

beforeAll(async () => {
  testEnv = await createTestEnv();
  const developer = await onboard('usage@example.test');
  world.developerId = developer.developer.id;
  world.key = developer.key.api_key;
  const apps = await sql<{ id: string; public_app_id: string }>(
    testEnv,
    `insert into apps (developer_id, public_app_id, name)
     values ($1, 'app_usage_one', 'One'), ($1, 'app_usage_two', 'Two') returning id, public_app_id`,
    [world.developerId],
  );
  world.apps = apps.map((row) => ({ id: row.id, publicAppId: row.public_app_id }));
  const [demo] = await sql<{ id: string }>(testEnv, `select id from apps where public_app_id = 'app_demo_local'`);
  world.demoAppId = demo!.id;

  // A DST week on both sides of the Atlantic is not the same week: New York moves on 2026-03-08,
  // Berlin on 2026-03-29; Lord Howe moves by half an hour on 2026-04-05. Part folded, part pending.
  const ids = world.apps.map((app) => app.id);
  await insertEvents(ids, instants('2026-03-05T00:00:00Z', 6, 300, 1), 11);
  await insertEvents(ids, instants('2026-03-27T00:00:00Z', 11, 300, 2), 12);
  // Exactly at and around local midnights of the zones above (boundaries belong to the later day).
  const edges = [
    '2026-03-08T05:00:00Z',
    '2026-03-09T04:00:00Z',
    '2026-03-28T23:00:00Z',
    '2026-03-29T22:00:00Z',
    '2026-03-07T18:30:00Z',
    '2026-03-07T18:15:00Z',
    '2026-04-04T13:00:00Z',
    '2026-04-05T13:30:00Z',
    '2026-03-08T10:45:00Z',
  ].flatMap((at) => [Date.parse(at) - 1, Date.parse(at), Date.parse(at) + 1].map((time) => new Date(time)));
  await insertEvents(ids, edges, 13);
  await fold();
  await insertEvents(ids, instants('2026-03-06T00:00:00Z', 4, 80, 3), 14);
  await insertEvents(ids, instants('2026-03-28T00:00:00Z', 9, 80, 4), 15);
  // The demo developer's own usage, which this developer must never see.
  await insertEvents([world.demoAppId], instants('2026-03-05T00:00:00Z', 30, 40, 5), 16);
});

describe('GET /v1/developer/usage', () => {
  it('equals a brute-force aggregate of the raw events, folded or not, in every zone (DST, sub-hour offsets)', async () => {
    expect(await pending()).toBeGreaterThan(0);
    for (const tz of zones) {
      for (const [from, to] of [
        ['2026-03-04', '2026-04-10'],
        ['2026-03-08', '2026-03-08'],
        ['2026-03-29', '2026-03-30'],
      ] as const) {
        const expected = await bruteForce(tz, from, to, world.developerId);
        const { rows, totals } = await walk(`from=${from}&to=${to}&tz=${encodeURIComponent(tz)}`, 1000);
        expect(rows, `${tz} ${from}..${to}`).toEqual(expected);
        expect(totals.calls).toBe(expected.reduce((sum, row) => sum + row.calls, 0));
        expect(expected.length).toBeGreaterThan(0);
      }
    }
  });

  it('answers the same before and after the pending events are folded, and folding empties the list', async () => {
    const query = 'from=2026-03-01&to=2026-04-15&tz=America/New_York';
    const before = await walk(query, 1000);
    expect(await pending()).toBeGreaterThan(0);
    const folded = await rollUpUsage(createDatabase(testEnv).db, 37);
    expect(folded).toBeGreaterThan(37);
    expect(await pending()).toBe(0);
    expect(await walk(query, 1000)).toEqual(before);
    // New events after the fold are pending again, and counted.
    await insertEvents([world.apps[0]!.id], [new Date('2026-03-10T12:00:00Z')], 17);
    const after = await walk(query, 1000);
    expect(after.totals.calls).toBe(before.totals.calls + 1);
  });

  it('is exact whatever time zone the database session runs in', async () => {
    const [{ name }] = (await sql<{ name: string }>(testEnv, 'select current_database() as name')) as [{ name: string }];
    await sql(testEnv, `alter database "${name}" set timezone to 'Pacific/Chatham'`);
    try {
      for (const tz of ['UTC', 'Europe/Berlin', 'Asia/Kathmandu']) {
        const { rows } = await walk(`from=2026-03-04&to=2026-04-10&tz=${tz}`, 1000);
        expect(rows).toEqual(await bruteForce(tz, '2026-03-04', '2026-04-10', world.developerId));
      }
    } finally {
      await sql(testEnv, `alter database "${name}" reset timezone`);
    }
  });

  it('walks every row exactly once, in order, a page at a time; the totals are the whole range on every page', async () => {
    const query = 'from=2026-03-04&to=2026-04-10&tz=Asia/Kolkata';
    const all = await walk(query, 1000);
    const paged = await walk(query, 7);
    expect(paged.rows).toEqual(all.rows);
    expect(paged.totals).toEqual(all.totals);
    const keys = paged.rows.map((row) => [row.day, row.public_app_id, row.feature_key, row.model, row.provider, row.route_mode].join('|'));
    expect(new Set(keys).size).toBe(keys.length);
    for (const row of paged.rows) {
      for (const field of ['retail_usd', 'developer_revenue_usd', 'upstream_cost_usd']) expect(row[field]).toMatch(/^\d+\.\d{8}$/);
    }
  });

  it('fills a page across days with no usage (a window too short is followed by the next days)', async () => {
    // The events leave 03-11..03-26 empty: a page whose cursor sits at the end of 03-10 finds its rows
    // only after the gap, past the days the rollup's per-day row count had promised.
    for (const tz of ['UTC', 'America/New_York']) {
      const query = `from=2026-03-04&to=2026-04-10&tz=${encodeURIComponent(tz)}`;
      const all = await walk(query, 1000);
      for (const limit of [1, 7, 50]) expect((await walk(query, limit)).rows, `${tz} limit ${limit}`).toEqual(all.rows);
    }
  });

  it('keeps the app-day totals equal to the rollup rows they add up, fold after fold', async () => {
    await insertEvents([world.apps[1]!.id], instants('2026-03-09T00:00:00Z', 2, 30, 6), 18);
    await fold();
    const mismatches = await sql<Body>(
      testEnv,
      `with sums as (
         select r.app_id, r.day, count(distinct (r.feature_key, r.provider, r.model, r.route_mode))::integer as keys, i.n,
                sum(r.calls[i.n])::bigint as calls, sum(r.input_tokens[i.n])::bigint as input_tokens,
                sum(r.output_tokens[i.n])::bigint as output_tokens, sum(r.retail_usd[i.n]) as retail_usd,
                sum(r.developer_revenue_usd[i.n]) as developer_revenue_usd, sum(r.upstream_cost_usd[i.n]) as upstream_cost_usd
           from usage_rollup_daily r cross join generate_series(1, 25) as i(n)
          group by r.app_id, r.day, i.n)
       select s.app_id, s.day, s.n from sums s
         full join (select a.app_id, a.day, a.keys, i.n, a.calls[i.n] as calls, a.input_tokens[i.n] as input_tokens,
                           a.output_tokens[i.n] as output_tokens, a.retail_usd[i.n] as retail_usd,
                           a.developer_revenue_usd[i.n] as developer_revenue_usd, a.upstream_cost_usd[i.n] as upstream_cost_usd
                      from usage_rollup_app_daily a cross join generate_series(1, 25) as i(n)) t
           on t.app_id = s.app_id and t.day = s.day and t.n = s.n
        where (s.keys, s.calls, s.input_tokens, s.output_tokens, s.retail_usd, s.developer_revenue_usd, s.upstream_cost_usd)
              is distinct from (t.keys, t.calls, t.input_tokens, t.output_tokens, t.retail_usd, t.developer_revenue_usd, t.upstream_cost_usd)`,
    );
    expect(mismatches).toEqual([]);
    const [{ count }] = (await sql<{ count: string }>(testEnv, 'select count(*) from usage_rollup_app_daily')) as [{ count: string }];
    expect(Number(count)).toBeGreaterThan(10);
  });

  it('filters by app, and a day with no usage is an empty page with zero totals', async () => {
    const one = await walk('from=2026-03-04&to=2026-04-10&app=app_usage_one', 1000);
    expect(one.rows.length).toBeGreaterThan(0);
    expect(one.rows.every((row) => row.public_app_id === 'app_usage_one')).toBe(true);
    const empty = await usage('from=2025-01-01&to=2025-01-31');
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({
      from: '2025-01-01',
      to: '2025-01-31',
      tz: 'UTC',
      data: [],
      next_cursor: null,
      totals: { calls: 0, input_tokens: 0, output_tokens: 0, retail_usd: '0.00000000', developer_revenue_usd: '0.00000000' },
    });
  });

  it('refuses bad parameters with 400 in the envelope', async () => {
    const bad = [
      'to=2026-03-01',
      'from=2026-03-01',
      'from=2026-02-30&to=2026-03-01',
      'from=2026-3-1&to=2026-03-02',
      'from=2026-03-02&to=2026-03-01',
      'from=2025-01-01&to=2026-01-02',
      'from=2026-03-01&to=2026-03-02&tz=Mars/Olympus_Mons',
      'from=2026-03-01&to=2026-03-02&tz=%2B05:30',
      'from=2026-03-01&to=2026-03-02&tz=EST',
      "from=2026-03-01&to=2026-03-02&tz=Europe/Berlin'--",
      'from=2026-03-01&to=2026-03-02&limit=0',
      'from=2026-03-01&to=2026-03-02&limit=1001',
      'from=2026-03-01&to=2026-03-02&limit=ten',
      'from=2026-03-01&to=2026-03-02&cursor=not*base64',
      `from=2026-03-01&to=2026-03-02&cursor=${btoa('{"day":"2026-03-01"}').replaceAll('=', '')}`,
      `from=2026-03-01&to=2026-03-02&cursor=${btoa('["2026-13-45","a","b","c","d","e"]').replaceAll('=', '')}`,
    ];
    for (const query of bad) {
      const { status, body, requestId } = await usage(query);
      expect(status, query).toBe(400);
      expect(body.error, query).toMatchObject({ code: 'invalid_request', request_id: requestId });
    }
    // 366 days is the longest range.
    expect((await usage('from=2024-01-01&to=2024-12-31')).status).toBe(200);
  });

  it("shows a developer only their own apps: another developer's rows never appear, their app is 404", async () => {
    const own = await walk('from=2026-03-01&to=2026-04-30', 1000);
    expect(own.rows.every((row) => row.public_app_id.startsWith('app_usage_'))).toBe(true);

    const response = await call(api(), testEnv, '/v1/developer/usage?from=2026-03-01&to=2026-04-30', { token: developerKey });
    const body = (await response.json()) as Body;
    expect(response.status).toBe(200);
    expect(body.data.length).toBeGreaterThan(0);
    expect(body.data.every((row: Body) => row.public_app_id === 'app_demo_local')).toBe(true);
    expect(body.totals.calls).toBe(40);

    for (const app of ['app_demo_local', 'app_does_not_exist']) {
      const { status, body: refused } = await usage(`from=2026-03-01&to=2026-04-30&app=${app}`);
      expect(status).toBe(404);
      expect(refused.error.code).toBe('not_found');
    }
  });

  it('refuses no key or a revoked key with 401 and a suspended developer with 403', async () => {
    const path = '/v1/developer/usage?from=2026-03-01&to=2026-03-02';
    const revokedOwner = await onboard('usage-revoked@example.test');
    const spare = (await (await call(api(), testEnv, '/v1/developer/keys', { json: {}, token: revokedOwner.key.api_key })).json()) as Body;
    await call(api(), testEnv, `/v1/developer/keys/${revokedOwner.key.id}/revoke`, { method: 'POST', token: spare.api_key });
    const suspended = await onboard('usage-suspended@example.test');
    await call(api(), testEnv, `/v1/admin/developers/${suspended.developer.id}/suspend`, { method: 'POST', token: adminToken });

    for (const [token, status, code] of [
      [undefined, 401, 'unauthorized'],
      ['fdk_not_a_key', 401, 'unauthorized'],
      [revokedOwner.key.api_key, 401, 'unauthorized'],
      [suspended.key.api_key, 403, 'forbidden'],
      [adminToken, 401, 'unauthorized'],
    ] as const) {
      const response = await call(api(), testEnv, path, { token });
      expect(response.status).toBe(status);
      const body = (await response.json()) as Body;
      expect(body.error).toMatchObject({ code, request_id: response.headers.get('x-request-id') });
    }
  });
});
