/**
 * The database connection dropped in the middle of a booking. Whichever side of the commit the cut
 * falls on, the client gets the error envelope, the call is charged at most once (a retry with the
 * same request id is refused, never charged again), no money is created or lost, and the ledger
 * reconciles.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, call, createTestEnv, type TestEnv } from '../../../test/harness.ts';
import { chat, fundedSession, gatewayWith, holdStatus, newRequestId, sseData, usageRows, userMessage, wallet } from '../../test/gateway-test-kit.ts';
import { installConnectionCutter, type CutPoint } from './connection-cutter.ts';

let testEnv: TestEnv;
const cutter = installConnectionCutter();
beforeAll(async () => {
  testEnv = await createTestEnv();
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
  ])('cut %s: error envelope, charged at most once, retry never charged again, books reconcile', async (_case, point) => {
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    cutter.arm('faucet_book_usage(', point);
    const cutsBefore = cutter.cuts;
    const response = await chat(gatewayWith(), testEnv, session.token, hello, requestId);
    expect(cutter.cuts).toBe(cutsBefore + 1);
    const error = await errorOf(response);
    expect(error.request_id).toBe(requestId);
    expect(error.status).toBeGreaterThanOrEqual(500);
    expect(error.message).not.toMatch(/terminated|socket|websocket|postgres|faucet_book_usage/i);

    const rows = await usageRows(testEnv, requestId);
    const after = await wallet(testEnv, session.walletId);
    if (point === 'after_commit') {
      expect(rows).toHaveLength(1);
      expect(await holdStatus(testEnv, requestId)).toBe('settled');
      expect(after.held).toBe('0.00000000');
      expect(after.balance).not.toBe('1.00000000');
    } else {
      expect(rows).toEqual([]);
      // Nothing booked: the hold is released at once, not left to block the balance until it expires.
      expect(await holdStatus(testEnv, requestId)).toBe('released');
      expect(after).toEqual({ balance: '1.00000000', held: '0.00000000', available: '1.00000000' });
    }

    const retry = await chat(gatewayWith(), testEnv, session.token, hello, requestId);
    expect(await errorOf(retry)).toMatchObject({ status: 409, code: 'conflict' });
    expect(await usageRows(testEnv, requestId)).toHaveLength(rows.length);
    expect((await wallet(testEnv, session.walletId)).balance).toBe(after.balance);
    expect(await reconciliationOk()).toBe(true);
  });

  it('a cut while settling a stream ends the stream with an error event, never a silent [DONE]; the books reconcile', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    cutter.arm('faucet_book_usage(', 'after_commit');
    const response = await chat(gatewayWith(), testEnv, session.token, { ...hello, stream: true }, requestId);
    expect(response.status).toBe(200);
    const events = sseData(await response.text());
    expect(events.at(-1)).not.toBe('[DONE]');
    expect(JSON.parse(events.at(-1)!)).toMatchObject({ error: { request_id: requestId } });
    expect(await usageRows(testEnv, requestId)).toHaveLength(1);
    expect(await holdStatus(testEnv, requestId)).toBe('settled');
    expect(await reconciliationOk()).toBe(true);
  });

  it('a cut while authorizing (before any upstream call) refuses the call and charges nothing', async () => {
    const session = await fundedSession(testEnv, '1.00000000');
    const requestId = newRequestId();
    cutter.arm('faucet_reserve_hold(', 'before_statement');
    const response = await chat(gatewayWith(), testEnv, session.token, hello, requestId);
    expect((await errorOf(response)).status).toBeGreaterThanOrEqual(500);
    expect(await usageRows(testEnv, requestId)).toEqual([]);
    expect(await wallet(testEnv, session.walletId)).toEqual({ balance: '1.00000000', held: '0.00000000', available: '1.00000000' });
    // The next call with a fresh request id works: the pool recovers.
    const next = await chat(gatewayWith(), testEnv, session.token, hello);
    expect(next.status).toBe(200);
    expect(await reconciliationOk()).toBe(true);
  });
});
