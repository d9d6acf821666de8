/**
 * GET /v1/developer/exports/{usage,revenue,payouts}.csv: the admin reports' generators scoped to the
 * calling developer — none of another developer's rows, whatever the range, also across many pages —
 * with the same columns, quoting, formula neutralising and range errors.
 */
import { parse } from 'csv-parse/sync';
import { beforeAll, describe, expect, it } from 'vitest';
import { fund } from '../../../test/ledger-kit.ts';
import { adminToken, api, call, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
type Body = Record<string, any>;
const acme = {} as { key: string; developerId: string; appId: string };
const rival = {} as { key: string; developerId: string; appId: string };

async function onboard(email: string, publicAppId: string, appName: string) {
  const response = await call(api(), testEnv, '/v1/admin/developers', { json: { name: email, email }, token: adminToken });
  const created = (await response.json()) as Body;
  const [app] = await sql<{ id: string }>(
    testEnv,
    'insert into apps (developer_id, public_app_id, name) values ($1, $2, $3) returning id',
    [created.developer.id, publicAppId, appName],
  );
  return { key: created.key.api_key as string, developerId: created.developer.id as string, appId: app!.id };
}

/** `count` usage events of one app, three per second from `start`, named `<prefix>-00001`…. */
async function insertUsage(appId: string, prefix: string, start: string, count: number, featureKey = 'chat') {
  await sql(
    testEnv,
    `insert into usage_events (request_id, app_id, feature_key, route_mode, provider, model, input_tokens, output_tokens,
       upstream_cost_usd, retail_usd, developer_revenue_usd, platform_share_usd, created_at)
     select $2 || '-' || lpad(n::text, 5, '0'), $1, $5, 'platform', 'mock', 'echo', 1, 1, 0.001, 0.004, 0.002, 0.001,
            $3::timestamptz + (n / 3) * interval '1 second'
       from generate_series(1, $4::int) as n`,
    [appId, prefix, start, count, featureKey],
  );
}

async function csv(path: string, token = acme.key) {
  const response = await call(api(), testEnv, path, { token });
  const text = await response.text();
  return {
    status: response.status,
    text,
    headers: response.headers,
    rows: response.status === 200 ? (parse(text) as string[][]) : [],
    body: response.status === 200 ? undefined : (JSON.parse(text) as Body),
  };
}

beforeAll(async () => {
  testEnv = await createTestEnv();
  Object.assign(acme, await onboard('acme@example.test', 'app_acme', '=HYPERLINK("http://evil.example","x")'));
  Object.assign(rival, await onboard('rival@example.test', 'app_rival', 'Rival'));
  // Interleaved in time, so a missing filter would mix them into every page.
  await insertUsage(acme.appId, 'acme', '2026-03-01T00:00:00Z', 1203);
  await insertUsage(rival.appId, 'rival', '2026-03-01T00:00:00Z', 700);
  await insertUsage(acme.appId, 'acme-formula', '2026-03-05T00:00:00Z', 1, '@SUM(A1)');
  for (const developer of [acme, rival]) {
    const [wallet] = await sql<{ id: string }>(testEnv, 'select id from wallets where developer_id = $1', [developer.developerId]);
    await fund(testEnv, wallet!.id, '3.00000000');
  }
  await call(api(), testEnv, '/v1/admin/payouts/run-mock', { json: { threshold_usd: '1.00000000' }, token: adminToken });
});

describe('GET /v1/developer/exports/usage.csv', () => {
  it("streams every usage line of the developer's apps, over many pages, and none of another developer's", async () => {
    const report = await csv('/v1/developer/exports/usage.csv');
    expect(report.status).toBe(200);
    expect(report.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(report.headers.get('content-disposition')).toBe('attachment; filename="usage.csv"');
    const admin = await csv('/v1/admin/reports/usage.csv', adminToken);
    expect(report.rows[0]).toEqual(admin.rows[0]);
    const lines = report.rows.slice(1);
    expect(lines).toHaveLength(1204);
    expect(new Set(lines.map((line) => line[1])).size).toBe(1204);
    expect(lines.every((line) => line[1]!.startsWith('acme') && line[2] === 'app_acme')).toBe(true);
    expect(report.text).not.toContain('rival');
    // The same lines as the admin report's, in the same order.
    expect(lines).toEqual(admin.rows.slice(1).filter((line) => line[2] === 'app_acme'));
    expect(lines.at(-1)![3]).toBe("'@SUM(A1)");

    const rivalReport = await csv('/v1/developer/exports/usage.csv', rival.key);
    expect(rivalReport.rows.slice(1)).toHaveLength(700);
    expect(rivalReport.text).not.toContain('acme');
  });

  it('applies from (inclusive) and to (exclusive)', async () => {
    const report = await csv('/v1/developer/exports/usage.csv?from=2026-03-01T00:00:01Z&to=2026-03-01T00:00:02Z');
    // One second of events (three share it; within a second the order is by id).
    expect(
      report.rows
        .slice(1)
        .map((line) => line[1])
        .sort(),
    ).toEqual(['acme-00003', 'acme-00004', 'acme-00005']);
  });

  it.each(['from=yesterday', 'from=2026-02-30', 'to=2026-03-01T10:00:00', 'from=2026-03-02&to=2026-03-01'])(
    'refuses %s with 400 in the envelope',
    async (query) => {
      const refused = await csv(`/v1/developer/exports/usage.csv?${query}`);
      expect(refused.status).toBe(400);
      expect(refused.body!.error).toMatchObject({ code: 'invalid_request', request_id: refused.headers.get('x-request-id') });
    },
  );
});

describe('GET /v1/developer/exports/revenue.csv', () => {
  it("sums only the developer's apps, the app name neutralised", async () => {
    const report = await csv('/v1/developer/exports/revenue.csv');
    expect(report.status).toBe(200);
    expect(report.rows.slice(1)).toEqual([
      [
        '2026-03-01',
        'app_acme',
        `'=HYPERLINK("http://evil.example","x")`,
        'platform',
        '1203',
        '1.20300000',
        '4.81200000',
        '2.40600000',
        '1.20300000',
      ],
      [
        '2026-03-05',
        'app_acme',
        `'=HYPERLINK("http://evil.example","x")`,
        'platform',
        '1',
        '0.00100000',
        '0.00400000',
        '0.00200000',
        '0.00100000',
      ],
    ]);
    const rivalReport = await csv('/v1/developer/exports/revenue.csv', rival.key);
    expect(rivalReport.rows.slice(1).map((line) => [line[1], line[4]])).toEqual([['app_rival', '700']]);
  });
});

describe('GET /v1/developer/exports/payouts.csv', () => {
  it("lists only the developer's payouts", async () => {
    const report = await csv('/v1/developer/exports/payouts.csv');
    expect(report.status).toBe(200);
    expect(report.rows[0]).toEqual((await csv('/v1/admin/reports/payouts.csv', adminToken)).rows[0]);
    expect(report.rows.slice(1).map((line) => [line[2], line[5], line[6]])).toEqual([[acme.developerId, '3.00000000', 'pending']]);
    expect(report.text).not.toContain(rival.developerId);
  });
});

it('describes the money views and exports in the OpenAPI document, with their error responses', async () => {
  const response = await call(api(), testEnv, '/openapi.json');
  const document = (await response.json()) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
  for (const path of [
    '/v1/developer/wallet',
    '/v1/developer/end-users',
    '/v1/developer/payouts',
    '/v1/developer/exports/usage.csv',
    '/v1/developer/exports/revenue.csv',
    '/v1/developer/exports/payouts.csv',
  ]) {
    expect(Object.keys(document.paths[path]?.get?.responses ?? {}), path).toEqual(expect.arrayContaining(['200', '401', '403']));
  }
  expect(Object.keys(document.paths['/v1/developer/end-users']!.get!.responses)).toEqual(expect.arrayContaining(['400', '404']));
});
