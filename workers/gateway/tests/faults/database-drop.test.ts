/**
 * The database connection dropped in the middle of a booking made per call. The upstream has
 * answered, so the call must be billed: the gateway retries its booking once (the money key makes a
 * retry after a commit a duplicate, never a second charge). Whichever side of the commit the cut
 * falls on, the call is charged exactly once, a retry with the same request id is refused, no money
 * is created or lost, and the ledger reconciles. When the retry fails too, the client gets the error
 * envelope and the call stays on record for the sweeper, which books it at its bound.
 *
 * Per call only: the statements cut here are the per-call path's own. On a wallet object's lease
 * the gateway books nothing; the object books at its flush, whose faults wallet/wallet-object.test.ts
 * covers (Postgres unreachable, a flush failing half-way, an object restarted with calls unflushed).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { sweepStaleCalls } from '#shared/calls/sweep-stale-calls.ts';
import { adminToken, api, call, createDatabase, sql, type TestEnv } from '../../../test/harness.ts';
import {
  chat,
  fundedSession,
  gatewayWith,
  holdStatus,
  newRequestId,
  perCallTestEnv,
  sseData,
  usageRows,
  userMessage,
  wallet,
} from '../../../test/gateway-kit.ts';
import { installConnectionCutter, type CutPoint } from './connection-cutter.ts';

let testEnv: TestEnv;
const cutter = installConnectionCutter();
beforeAll(async () => {
  testEnv = await perCallTestEnv({ CALL_SETTLE_GRACE_SECONDS: '1' });
});

const hello = { model: 'mock:echo', feature: 'chat', max_tokens: 10, messages: [userMessage('hello there')] };

async function errorOf(response: Response) {
  const body = (await response.json()) as { error: { code: string; message: string; request_id: string } };
  expect(body.error.request_id).toBe(response.headers.get('x-request-id'));
  return { status: response.status, ...body.error };
}

async function reconciliationOk(): Promise<boolean> {
  const response = await call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token: adminToken });
  expect(response.status).toBe(200);
  return ((await response.json()) as { ok: boolean }).ok;
}

describe('database connection dropped mid-booking', () => {
  it.each<[string, CutPoint]>([
    ['before the booking statement reaches the database', 'before_statement'],
    ['after the database committed the booking', 'after_commit'],
  ])('cut %s: the booking is retried, charged exactly once, a replay never charged again, books reconcile', async (_case, point) => {
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    cutter.arm('faucet_book_usage(', point);
    const cutsBefore = cutter.cuts;
    const response = await chat(gatewayWith(), testEnv, session.token, hello, requestId);
    expect(cutter.cuts).toBe(cutsBefore + 1);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { faucet: { charge: { amount_usd: string } } };

    const rows = await usageRows(testEnv, requestId);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.retail_usd).toBe(body.faucet.charge.amount_usd);
    expect(await holdStatus(testEnv, requestId)).toBe('settled');
    const after = await wallet(testEnv, session.walletId);
    expect(after.held).toBe('0.00000000');
    expect(after.balance).not.toBe('1.00000000');

    const retry = await chat(gatewayWith(), testEnv, session.token, hello, requestId);
    expect(await errorOf(retry)).toMatchObject({ status: 409, code: 'conflict' });
    expect(await usageRows(testEnv, requestId)).toHaveLength(1);
    expect((await wallet(testEnv, session.walletId)).balance).toBe(after.balance);
    expect(await reconciliationOk()).toBe(true);
  });

  it('both booking attempts cut: the error envelope, the hold kept, and the sweeper books the call at its bound', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    cutter.arm('faucet_book_usage(', 'before_statement', 2);
    const response = await chat(gatewayWith(), testEnv, session.token, hello, requestId);
    const error = await errorOf(response);
    // A lost connection is the database's failure, not the server's: 503 unavailable with retry-after.
    expect(error).toMatchObject({ status: 503, code: 'unavailable' });
    expect(response.headers.get('retry-after')).not.toBeNull();
    expect(error.message).not.toMatch(/terminated|socket|websocket|postgres|faucet_book_usage/i);
    expect(await usageRows(testEnv, requestId)).toEqual([]);
    // The upstream answered: its hold must keep covering the call until it is booked.
    expect(await holdStatus(testEnv, requestId)).toBe('active');

    await sql(testEnv, `update gateway_calls set deadline_at = now() - interval '1 hour' where client_request_id = $1`, [requestId]);
    const { db, pool } = createDatabase(testEnv);
    try {
      expect((await sweepStaleCalls(db, testEnv)).booked).toBe(1);
    } finally {
      await pool.end();
    }
    expect(await usageRows(testEnv, requestId)).toMatchObject([{ estimated: true, output_tokens: 10 }]);
    expect(await holdStatus(testEnv, requestId)).toBe('settled');
    expect(await reconciliationOk()).toBe(true);
  });

  it('a cut while settling a stream is retried: the stream still ends with its charge and [DONE]; the books reconcile', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    cutter.arm('faucet_book_usage(', 'after_commit');
    const response = await chat(gatewayWith(), testEnv, session.token, { ...hello, stream: true }, requestId);
    expect(response.status).toBe(200);
    const events = sseData(await response.text());
    expect(events.at(-1)).toBe('[DONE]');
    expect(JSON.parse(events.at(-2)!)).toMatchObject({ object: 'faucet.usage', faucet: { request_id: requestId } });
    expect(await usageRows(testEnv, requestId)).toHaveLength(1);
    expect(await holdStatus(testEnv, requestId)).toBe('settled');
    expect(await reconciliationOk()).toBe(true);
  });

  it('a stream whose booking fails twice ends with an error event, never a silent [DONE]', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    cutter.arm('faucet_book_usage(', 'before_statement', 2);
    const response = await chat(gatewayWith(), testEnv, session.token, { ...hello, stream: true }, requestId);
    const events = sseData(await response.text());
    expect(events.at(-1)).not.toBe('[DONE]');
    expect(JSON.parse(events.at(-1)!)).toMatchObject({ error: { code: 'unavailable', request_id: requestId } });
    expect(await holdStatus(testEnv, requestId)).toBe('active');
  });

  it('a cut while authorizing (before any upstream call) refuses the call and charges nothing', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    cutter.arm('faucet_authorize_call(', 'before_statement');
    const response = await chat(gatewayWith(), testEnv, session.token, hello, requestId);
    expect(await errorOf(response)).toMatchObject({ status: 503, code: 'unavailable' });
    expect(await usageRows(testEnv, requestId)).toEqual([]);
    expect(await wallet(testEnv, session.walletId)).toEqual({ balance: '1.00000000', held: '0.00000000', available: '1.00000000' });
    // The next call with a fresh request id works: the pool recovers.
    const next = await chat(gatewayWith(), testEnv, session.token, hello);
    expect(next.status).toBe(200);
    expect(await reconciliationOk()).toBe(true);
  });
});
