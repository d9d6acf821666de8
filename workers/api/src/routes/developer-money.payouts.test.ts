/**
 * GET /v1/developer/payouts: the calling developer's payouts only, newest first, with their state
 * and dates, in keyset pages; a status filter; another developer's payout id as a cursor reveals
 * nothing.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { fund } from '../../../test/ledger-kit.ts';
import { adminToken, api, call, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
type Body = Record<string, any>;
const acme = {} as { key: string; walletId: string; payouts: Body[] };
const rival = {} as { key: string; walletId: string; payoutId: string };

const request = async (path: string, token: string, init: { json?: unknown; method?: string } = {}) => {
  const response = await call(api(), testEnv, path, { ...init, token });
  return { status: response.status, body: (await response.json()) as Body, requestId: response.headers.get('x-request-id') };
};

async function onboard(email: string) {
  const created = await request('/v1/admin/developers', adminToken, { json: { name: email, email } });
  const [wallet] = await sql<{ id: string }>(testEnv, 'select id from wallets where developer_id = $1', [created.body.developer.id]);
  return { key: created.body.key.api_key as string, walletId: wallet!.id };
}

async function runPayouts(): Promise<Body[]> {
  const run = await request('/v1/admin/payouts/run-mock', adminToken, { json: { threshold_usd: '1.00000000' } });
  expect(run.status).toBe(201);
  return run.body.data;
}

beforeAll(async () => {
  testEnv = await createTestEnv();
  Object.assign(acme, await onboard('acme@example.test'), { payouts: [] });
  Object.assign(rival, await onboard('rival@example.test'));
  await fund(testEnv, acme.walletId, '10.00000000');
  await fund(testEnv, rival.walletId, '4.00000000');
  const first = await runPayouts();
  const cancelled = first.find((payout) => payout.wallet_id === acme.walletId)!;
  rival.payoutId = first.find((payout) => payout.wallet_id === rival.walletId)!.id;
  await request(`/v1/admin/payouts/${cancelled.id}/cancel`, adminToken, { json: { operator_note: 'wrong account' } });
  await fund(testEnv, acme.walletId, '5.00000000');
  const paid = (await runPayouts()).find((payout) => payout.wallet_id === acme.walletId)!;
  await request(`/v1/admin/payouts/${paid.id}/approve`, adminToken, { json: { operator_note: 'ok' } });
  await request(`/v1/admin/payouts/${paid.id}/mark-paid`, adminToken, { method: 'POST' });
  await fund(testEnv, acme.walletId, '2.00000000');
  const pending = (await runPayouts()).find((payout) => payout.wallet_id === acme.walletId)!;
  acme.payouts = [pending, paid, cancelled];
});

describe('GET /v1/developer/payouts', () => {
  it("lists the developer's own payouts newest first with state, amount and dates", async () => {
    const listed = await request('/v1/developer/payouts', acme.key);
    expect(listed.status).toBe(200);
    expect(listed.body.next_cursor).toBeNull();
    expect(listed.body.data.map((payout: Body) => [payout.id, payout.status, payout.amount_usd])).toEqual([
      [acme.payouts[0]!.id, 'pending', '2.00000000'],
      [acme.payouts[1]!.id, 'paid', '15.00000000'],
      [acme.payouts[2]!.id, 'cancelled', '10.00000000'],
    ]);
    const paid = listed.body.data[1];
    expect(paid.approved_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(paid.paid_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(paid.ledger_transaction_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(listed.body.data[2]).toMatchObject({ closed_at: expect.any(String), paid_at: null, operator_note: 'wrong account' });
    expect(JSON.stringify(listed.body)).not.toContain(rival.payoutId);
  });

  it('pages with the last id as cursor, and filters by status', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 5; pages++) {
      const page = await request(`/v1/developer/payouts?limit=1${cursor ? `&cursor=${cursor}` : ''}`, acme.key);
      seen.push(...page.body.data.map((payout: Body) => payout.id));
      cursor = page.body.next_cursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(acme.payouts.map((payout) => payout.id));
    const paid = await request('/v1/developer/payouts?status=paid', acme.key);
    expect(paid.body.data.map((payout: Body) => payout.id)).toEqual([acme.payouts[1]!.id]);
  });

  it("shows the rival only the rival's payout, and a rival's payout id as cursor yields an empty page", async () => {
    const own = await request('/v1/developer/payouts', rival.key);
    expect(own.body.data.map((payout: Body) => payout.id)).toEqual([rival.payoutId]);
    const probing = await request(`/v1/developer/payouts?cursor=${acme.payouts[2]!.id}`, rival.key);
    expect(probing).toMatchObject({ status: 200, body: { data: [], next_cursor: null } });
    const fromAcme = await request(`/v1/developer/payouts?cursor=${rival.payoutId}`, acme.key);
    expect(fromAcme).toMatchObject({ status: 200, body: { data: [], next_cursor: null } });
  });

  it.each(['status=approved', 'limit=0', 'limit=1.5', 'cursor=not-a-uuid', `cursor=${'1'.repeat(65)}`])(
    'refuses %s with 400 in the envelope',
    async (query) => {
      const refused = await request(`/v1/developer/payouts?${query}`, acme.key);
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ code: 'invalid_request', request_id: refused.requestId });
    },
  );
});
