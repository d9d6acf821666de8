/**
 * `listCalls` without an end user reads each of the developer's apps through its own index and
 * merges them: pages across apps come newest first, (created_at, id) order kept through ties and
 * cursors, each call once, another developer's never; filters (estimated, request id) hold across apps.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, createTestEnv, demoFixture, sql, type TestEnv } from '../../test/harness.ts';
import type { Database } from '../db.ts';
import { type CallFilters, listCalls } from './list-calls.ts';

let testEnv: TestEnv;
let database: Database;
let developerId: string;
let secondAppId: string;
/** The developer's calls as [created_at (µs), id, client request id, estimated], newest first. */
let expected: Array<{ at: string; id: string; requestId: string; estimated: boolean | null; appId: string; endUserId: string }>;

beforeAll(async () => {
  testEnv = await createTestEnv();
  database = createDatabase(testEnv);
  const demo = await demoFixture(testEnv);
  developerId = demo.developer_id;
  const [other] = await sql<{ id: string }>(
    testEnv,
    `insert into developers (name, email) values ('Other', 'other-list-calls@faucet.test') returning id`,
  );
  const apps = await sql<{ id: string; mine: boolean }>(
    testEnv,
    `insert into apps (developer_id, public_app_id, name)
     values ($1, 'app_list_calls_second', 'Second'), ($2, 'app_list_calls_other', 'Other')
     returning id, developer_id = $1 as mine`,
    [developerId, other!.id],
  );
  secondAppId = apps.find((app) => app.mine)!.id;
  const otherAppId = apps.find((app) => !app.mine)!.id;
  // Calls of three apps interleaved in time, some sharing an instant across apps (ties broken by id);
  // every third answered call estimated.
  await sql(
    testEnv,
    `with users as (
       insert into end_users (app_id, external_user_hash)
       select app, 'list-calls-' || app from unnest(array[$1::uuid, $2::uuid, $3::uuid]) app returning id, app_id),
     calls as (
       insert into gateway_call_log (id, app_id, end_user_id, feature_key, surface, requested_model, provider, model, route_mode,
                                     outcome, client_request_id, created_at)
       select gen_random_uuid(), u.app_id, u.id, 'chat', 'chat.completions', 'mock:echo', 'mock', 'echo', 'platform',
              case when n % 4 = 0 then 'refused' else 'answered' end, 'list-calls-' || u.app_id || '-' || n,
              timestamptz '2026-11-01T00:00:00Z' + (n / 2) * interval '1 minute'
         from users u cross join generate_series(1, 13) n
       returning id, app_id, end_user_id, outcome, client_request_id, created_at)
     insert into usage_events (request_id, app_id, end_user_id, feature_key, route_mode, provider, model, input_tokens,
                               output_tokens, estimated, upstream_cost_usd, retail_usd, developer_revenue_usd,
                               platform_share_usd, client_request_id, created_at)
     select 'call:' || c.id, c.app_id, c.end_user_id, 'chat', 'platform', 'mock', 'echo', 10, 5,
            row_number() over (order by c.created_at, c.id) % 3 = 0, 0, 0, 0, 0, c.client_request_id, c.created_at
       from calls c where c.outcome = 'answered'`,
    [demo.app_id, secondAppId, otherAppId],
  );
  const rows = await sql<{ at: string; id: string; request_id: string; estimated: boolean | null; app_id: string; end_user_id: string }>(
    testEnv,
    `select to_char(l.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at, l.id::text,
            l.client_request_id as request_id, e.estimated, l.app_id::text, l.end_user_id::text
       from gateway_call_log l join apps a on a.id = l.app_id
       left join usage_events e on e.request_id = 'call:' || l.id::text
      where a.developer_id = $1 order by l.created_at desc, l.id desc`,
    [developerId],
  );
  expected = rows.map((row) => ({
    at: row.at,
    id: row.id,
    requestId: row.request_id,
    estimated: row.estimated,
    appId: row.app_id,
    endUserId: row.end_user_id,
  }));
});
afterAll(() => database.pool.end());

/** Every page of the filter, `limit` at a time, following the cursors. */
async function allPages(filters: CallFilters, limit: number) {
  const seen: Array<{ at: string; id: string }> = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const page = await listCalls(database.db, { developerId, filters, limit, cursor });
    seen.push(...page.rows.map((row) => ({ at: row.created_at, id: row.id })));
    if (page.nextCursor === null) return seen;
    cursor = page.nextCursor;
  }
  throw new Error('pages never ended');
}

describe('listCalls across the developer’s apps', () => {
  it('pages through every call of both apps newest first, ties by id, each once, no other developer’s', async () => {
    expect(expected).toHaveLength(26);
    for (const limit of [1, 3, 7, 100]) {
      expect(await allPages({}, limit)).toEqual(expected.map(({ at, id }) => ({ at, id })));
    }
  });

  it('pages through one app’s calls, and one end user’s, in the same order', async () => {
    const ofApp = expected.filter((call) => call.appId === secondAppId);
    expect(await allPages({ appId: secondAppId }, 4)).toEqual(ofApp.map(({ at, id }) => ({ at, id })));
    expect(await allPages({ endUserIds: [ofApp[0]!.endUserId] }, 4)).toEqual(ofApp.map(({ at, id }) => ({ at, id })));
    expect(await allPages({ appId: secondAppId, outcome: 'estimated' }, 1)).toEqual(
      ofApp.filter((call) => call.estimated === true).map(({ at, id }) => ({ at, id })),
    );
  });

  it('finds the estimated calls of every app, in order, through the cursor', async () => {
    const estimated = expected.filter((call) => call.estimated === true).map(({ at, id }) => ({ at, id }));
    expect(estimated.length).toBeGreaterThan(2);
    expect(await allPages({ outcome: 'estimated' }, 2)).toEqual(estimated);
  });

  it('finds a call by its request id in whichever app it was made, and only in the app asked for', async () => {
    const call = expected.find((row) => row.requestId.includes(secondAppId))!;
    const found = await listCalls(database.db, { developerId, filters: { requestId: call.requestId }, limit: 20, cursor: undefined });
    expect(found.rows.map((row) => row.id)).toEqual([call.id]);
    const demo = await demoFixture(testEnv);
    const elsewhere = await listCalls(database.db, {
      developerId,
      filters: { requestId: call.requestId, appId: demo.app_id },
      limit: 20,
      cursor: undefined,
    });
    expect(elsewhere.rows).toEqual([]);
  });
});
