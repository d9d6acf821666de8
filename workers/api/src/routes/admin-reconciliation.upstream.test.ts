/**
 * The upstream audit endpoint: every paid gateway call that has ended (or is past its deadline and
 * grace) has a booking. A call the gateway authorized and never billed makes it fail, whatever
 * the ledger's own reconciliation says.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { api, adminToken, call, createSession, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv({ CALL_SETTLE_GRACE_SECONDS: '60' });
});

interface Audit {
  ok: boolean;
  paid_calls: number;
  unbilled_calls: number;
  in_flight: number;
  receivable_bookings: number;
}

const audit = async (token = adminToken) => call(api(), testEnv, '/v1/admin/reconciliation/upstream', { token });

/** A gateway call record as the authorize statement writes it, with no booking. */
async function unbookedCall(endUserId: string, options: { routeMode: string; status: string; deadline: string }): Promise<string> {
  const id = crypto.randomUUID();
  await sql(
    testEnv,
    `insert into gateway_calls (id, money_key, client_request_id, fingerprint, app_id, end_user_id, feature_key, route_mode,
                                provider, model, bound_input_tokens, bound_output_tokens, status, deadline_at)
     select $1::uuid, 'call:' || $1::text, $2, 'f', e.app_id, e.id, 'chat', $3, 'openai', 'gpt-4o-mini', 100, 100, $4, now() + $5::interval
       from end_users e where e.id = $6`,
    [id, `req-${id}`, options.routeMode, options.status, options.deadline, endUserId],
  );
  return id;
}

describe('GET /v1/admin/reconciliation/upstream', () => {
  it('refuses a missing or wrong admin token with 401', async () => {
    expect((await call(api(), testEnv, '/v1/admin/reconciliation/upstream')).status).toBe(401);
    expect((await audit('nope-nope-nope-nope')).status).toBe(401);
  });

  it('judges only ended paid calls: one in flight within its deadline is not yet unbilled, a BYOK call is not paid', async () => {
    const { endUserId } = await createSession(testEnv);
    await unbookedCall(endUserId, { routeMode: 'platform', status: 'in_flight', deadline: '10 minutes' });
    await unbookedCall(endUserId, { routeMode: 'byok', status: 'settled', deadline: '-1 hour' });
    const report = (await (await audit()).json()) as Audit;
    expect(report).toMatchObject({ ok: true, unbilled_calls: 0 });
    expect(report.in_flight).toBeGreaterThanOrEqual(1);
  });

  it('fails on a paid call that ended, or outlived its deadline and grace, without a booking', async () => {
    const { endUserId } = await createSession(testEnv);
    await unbookedCall(endUserId, { routeMode: 'platform', status: 'settled', deadline: '5 minutes' });
    await unbookedCall(endUserId, { routeMode: 'developer_key', status: 'in_flight', deadline: '-2 minutes' });
    const response = await audit();
    expect(response.status).toBe(200);
    expect((await response.json()) as Audit).toMatchObject({ ok: false, unbilled_calls: 2 });
  });
});
