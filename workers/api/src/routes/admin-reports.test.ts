import { parse } from 'csv-parse/sync';
import { beforeAll, describe, expect, it } from 'vitest';
import { fund, openLedgerDatabase } from '../../../test/ledger-kit.ts';
import { streamReport } from '../reports/csv-stream.ts';
import { parseReportRange } from '../reports/report-range.ts';
import { revenueReport } from '../reports/revenue-report.ts';
import { adminToken, api, call, createDatabase, createTestEnv, demoFixture, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let evilAppId: string;
let demoAppId: string;

const FORMULA_APP_NAME = '=HYPERLINK("http://evil.example","click")';

async function insertUsage(
  appId: string,
  createdAt: string,
  fields: { requestId: string; featureKey?: string; model?: string; routeMode?: string; retail?: string },
) {
  await sql(
    testEnv,
    `insert into usage_events (request_id, app_id, feature_key, route_mode, provider, model, input_tokens, output_tokens,
       estimated, upstream_cost_usd, retail_usd, developer_revenue_usd, platform_share_usd, created_at)
     values ($1, $2, $3, $4, 'openai', $5, 10, 20, false, 0.001, $6, 0.002, 0.003, $7)`,
    [
      fields.requestId,
      appId,
      fields.featureKey ?? 'chat',
      fields.routeMode ?? 'platform',
      fields.model ?? 'gpt-4o-mini',
      fields.retail ?? '0.006',
      createdAt,
    ],
  );
}

async function csv(path: string): Promise<{ status: number; text: string; rows: string[][]; contentType: string | null }> {
  const response = await call(api(), testEnv, path, { token: adminToken });
  const text = await response.text();
  return {
    status: response.status,
    text,
    contentType: response.headers.get('content-type'),
    rows: response.status === 200 ? (parse(text, { relax_column_count: false }) as string[][]) : [],
  };
}

beforeAll(async () => {
  testEnv = await createTestEnv();
  demoAppId = (await demoFixture(testEnv)).app_id;
  const developerId = (await demoFixture(testEnv)).developer_id;
  [{ id: evilAppId }] = (await sql<{ id: string }>(
    testEnv,
    `insert into apps (developer_id, public_app_id, name) values ($1, 'app_evil', $2) returning id`,
    [developerId, FORMULA_APP_NAME],
  )) as [{ id: string }];
  await insertUsage(demoAppId, '2025-03-01T10:00:00Z', { requestId: 'req-a', featureKey: '=1+1', model: 'model "x", y\nz' });
  await insertUsage(demoAppId, '2025-03-01T11:00:00Z', { requestId: 'req-b', routeMode: 'byok', retail: '0.01' });
  await insertUsage(evilAppId, '2025-03-01T12:00:00Z', { requestId: 'req-c', featureKey: '@SUM(A1)' });
  await insertUsage(demoAppId, '2025-03-02T09:00:00Z', { requestId: 'req-d' });
  await insertUsage(demoAppId, '2025-03-03T09:00:00Z', { requestId: 'req-e' });
});

describe('GET /v1/admin/reports/usage.csv', () => {
  it('streams a header row and one RFC 4180 line per event, formula-looking text neutralised', async () => {
    const report = await csv('/v1/admin/reports/usage.csv?from=2025-03-01&to=2025-03-02');
    expect(report.status).toBe(200);
    expect(report.contentType).toBe('text/csv; charset=utf-8');
    const [header, ...lines] = report.rows;
    expect(header).toEqual([
      'created_at',
      'request_id',
      'app_public_id',
      'feature_key',
      'route_mode',
      'provider',
      'model',
      'input_tokens',
      'output_tokens',
      'cached_tokens',
      'estimated',
      'upstream_cost_usd',
      'retail_usd',
      'developer_revenue_usd',
      'platform_share_usd',
    ]);
    expect(lines.map((line) => line[1])).toEqual(['req-a', 'req-b', 'req-c']);
    expect(lines[0]).toEqual([
      '2025-03-01T10:00:00.000000Z',
      'req-a',
      'app_demo_local',
      "'=1+1",
      'platform',
      'openai',
      'model "x", y\nz',
      '10',
      '20',
      '0',
      'false',
      '0.00100000',
      '0.00600000',
      '0.00200000',
      '0.00300000',
    ]);
    expect(lines[2]![3]).toBe("'@SUM(A1)");
    expect(report.text.split('\r\n')[0]).toBe(header!.join(','));
  });

  it('applies from (inclusive) and to (exclusive) with dates or date-times', async () => {
    const ids = async (query: string) => (await csv(`/v1/admin/reports/usage.csv${query}`)).rows.slice(1).map((line) => line[1]);
    expect(await ids('?from=2025-03-02')).toEqual(expect.arrayContaining(['req-d', 'req-e']));
    expect(await ids('?from=2025-03-02&to=2025-03-03')).toEqual(['req-d']);
    expect(await ids('?from=2025-03-01T11:00:00Z&to=2025-03-01T12:00:00%2B00:00')).toEqual(['req-b']);
    expect(await ids('?to=2025-03-01T10:00:00Z')).toEqual([]);
  });

  it('refuses malformed or inverted ranges with 400 and needs the admin token', async () => {
    for (const query of [
      '?from=yesterday',
      '?from=2025-02-30',
      '?to=2025-03-01T10:00:00',
      '?from=2025-03-02&to=2025-03-01',
      '?from=2025-03-01&to=2025-03-01',
    ]) {
      const response = await call(api(), testEnv, `/v1/admin/reports/usage.csv${query}`, { token: adminToken });
      expect(response.status, query).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    }
    expect((await call(api(), testEnv, '/v1/admin/reports/usage.csv')).status).toBe(401);
  });

  it('pages through more rows than one database page, in order and without repeats', async () => {
    await sql(
      testEnv,
      `insert into usage_events (request_id, app_id, feature_key, route_mode, provider, model, input_tokens, output_tokens,
         upstream_cost_usd, retail_usd, developer_revenue_usd, platform_share_usd, created_at)
       select 'bulk-' || lpad(n::text, 5, '0'), $1, 'chat', 'platform', 'mock', 'echo', 1, 1, 0, 0, 0, 0,
              '2024-06-01T00:00:00Z'::timestamptz + (n / 3) * interval '1 second'
       from generate_series(1, 1203) as n`,
      [demoAppId],
    );
    const report = await csv('/v1/admin/reports/usage.csv?from=2024-06-01&to=2024-06-02');
    const ids = report.rows.slice(1).map((line) => line[1]);
    expect(ids).toHaveLength(1203);
    expect(new Set(ids).size).toBe(1203);
    // Three events share each second: the keyset (created_at, id) must neither skip nor repeat them.
    const expected = await sql<{ request_id: string }>(
      testEnv,
      `select request_id from usage_events where request_id like 'bulk-%' order by created_at, id`,
    );
    expect(ids).toEqual(expected.map((row) => row.request_id));
  });
});

describe('GET /v1/admin/reports/revenue.csv', () => {
  it('sums rated usage per UTC day, app and route', async () => {
    const report = await csv('/v1/admin/reports/revenue.csv?from=2025-03-01&to=2025-03-03');
    expect(report.status).toBe(200);
    const [header, ...lines] = report.rows;
    expect(header).toEqual([
      'day',
      'app_public_id',
      'app_name',
      'route_mode',
      'requests',
      'upstream_cost_usd',
      'retail_usd',
      'developer_revenue_usd',
      'platform_share_usd',
    ]);
    const byKey = Object.fromEntries(lines.map((line) => [`${line[0]} ${line[1]} ${line[3]}`, line]));
    expect(Object.keys(byKey).sort()).toEqual([
      '2025-03-01 app_demo_local byok',
      '2025-03-01 app_demo_local platform',
      '2025-03-01 app_evil platform',
      '2025-03-02 app_demo_local platform',
    ]);
    expect(byKey['2025-03-01 app_demo_local byok']!.slice(4)).toEqual(['1', '0.00100000', '0.01000000', '0.00200000', '0.00300000']);
    expect(byKey['2025-03-01 app_evil platform']![2]).toBe(`'${FORMULA_APP_NAME}`);
  });

  it('gives the same rows when read in pages of two', async () => {
    const range = { ...parseReportRange({ from: '2025-03-01', to: '2025-03-04' }), developerId: null };
    const database = createDatabase(testEnv);
    let released = false;
    const handle = { ...database, retain: () => () => void (released = true) };
    const paged = await new Response(await streamReport(handle, revenueReport, range, 2)).text().finally(() => database.pool.end());
    expect(released).toBe(true);
    const whole = await csv('/v1/admin/reports/revenue.csv?from=2025-03-01&to=2025-03-04');
    expect(paged).toBe(whole.text);
    expect(whole.rows).toHaveLength(1 + 5);
  });
});

describe('GET /v1/admin/reports/payouts.csv', () => {
  it('lists payouts with formula-looking names and notes neutralised, and no secrets', async () => {
    const database = openLedgerDatabase(testEnv, 2);
    try {
      const [developer] = await sql<{ id: string; wallet_id: string }>(
        testEnv,
        `with d as (insert into developers (name, email) values ('-2+3', 'formula@example.test') returning id),
         k as (insert into developer_keys (developer_id, key_hash, prefix)
               select id, 'secret-key-hash-never-exported', 'fdk_x' from d)
         insert into wallets (kind, developer_id) select 'developer', id from d returning developer_id as id, id as wallet_id`,
      );
      await fund(database, developer!.wallet_id, '77.00000000');
    } finally {
      await database.close();
    }
    const run = await call(api(), testEnv, '/v1/admin/payouts/run-mock', { token: adminToken, json: { threshold_usd: '70.00000000' } });
    const [payout] = ((await run.json()) as { data: { id: string }[] }).data;
    await call(api(), testEnv, `/v1/admin/payouts/${payout!.id}/approve`, {
      token: adminToken,
      json: { operator_note: '+cmd|"/C calc"!A0, ok' },
    });

    const report = await csv('/v1/admin/reports/payouts.csv');
    expect(report.status).toBe(200);
    const [header, ...lines] = report.rows;
    expect(header).toEqual([
      'created_at',
      'payout_id',
      'developer_id',
      'developer_name',
      'wallet_id',
      'amount_usd',
      'status',
      'operator_note',
      'approved_at',
      'paid_at',
      'ledger_transaction_id',
    ]);
    const line = lines.find((row) => row[1] === payout!.id)!;
    expect(line[3]).toBe("'-2+3");
    expect(line[5]).toBe('77.00000000');
    expect(line[6]).toBe('processing');
    expect(line[7]).toBe(`'+cmd|"/C calc"!A0, ok`);
    expect(line[8]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    expect(line[9]).toBe('');
    expect(report.text).not.toContain('secret-key-hash-never-exported');
    expect(report.text).not.toContain('formula@example.test');
  });
});
