/**
 * The payout operator paths read as an attacker and as a tired operator: thresholds that are zero,
 * negative, absurd or not numbers; runs at once; wallets with holds or open payouts; and approve,
 * mark-paid, cancel and reject in every order and at once. Money moves at most once, a reservation
 * is released at most once, and every test ends on the books agreeing.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { getWalletBalance } from '#shared/ledger/wallet-balance.ts';
import { formatUsd } from '#shared/money/index.ts';
import { fund, openLedgerDatabase, type LedgerTestDatabase, expectReconciledAndAudited } from '../../../test/ledger-kit.ts';
import { adminToken, api, call, createTestEnv, sql, type TestEnv } from '../../../test/harness.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 16);
  return () => database.close();
});

interface Payout {
  id: string;
  wallet_id: string;
  amount_usd: string;
  status: Status;
}

type Action = 'approve' | 'mark-paid' | 'cancel' | 'reject';
type Status = 'pending' | 'processing' | 'paid' | 'cancelled' | 'rejected';
const actions: Action[] = ['approve', 'mark-paid', 'cancel', 'reject'];

/** New developer wallets holding `balances` (one each). */
async function developers(...balances: string[]): Promise<string[]> {
  const rows = await sql<{ wallet_id: string }>(
    testEnv,
    `with d as (insert into developers (name, email)
                select 'Attacked ' || n, gen_random_uuid()::text || '@example.test' from generate_series(1, $1::integer) n returning id)
     insert into wallets (kind, developer_id) select 'developer', id from d returning id as wallet_id`,
    [balances.length],
  );
  await Promise.all(rows.map((row, index) => (balances[index] === '0.00000000' ? null : fund(database, row.wallet_id, balances[index]!))));
  return rows.map((row) => row.wallet_id);
}

const admin = (path: string, json?: unknown, headers?: Record<string, string>) =>
  call(api(), testEnv, path, {
    method: 'POST',
    token: adminToken,
    ...(json === undefined ? {} : { json }),
    ...(headers ? { headers } : {}),
  });
const runMock = (threshold: unknown) => admin('/v1/admin/payouts/run-mock', { threshold_usd: threshold });
const act = (id: string, action: Action) =>
  admin(`/v1/admin/payouts/${id}/${action}`, action === 'mark-paid' ? undefined : { operator_note: `${action} by a tired operator` });

async function created(response: Response): Promise<Payout[]> {
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { data: Payout[] }).data;
}

async function wallet(walletId: string) {
  const balance = (await getWalletBalance(database.db, walletId))!;
  return { balance: formatUsd(balance.balanceUsd), available: formatUsd(balance.availableUsd) };
}

const units = (value: string) => BigInt(value.replace('.', ''));

/** Payouts over all wallets: none of zero or less, one open at most per wallet, never more held than a wallet has. */
async function expectPayoutInvariants() {
  const [row] = await sql<{ non_positive: number; doubly_open: number; over_reserved: number; hold_mismatch: number }>(
    testEnv,
    `select (select count(*)::int from payouts where amount <= 0) as non_positive,
            (select count(*)::int from (select wallet_id from payouts where status in ('pending', 'processing')
               group by wallet_id having count(*) > 1) t) as doubly_open,
            (select count(*)::int from wallets w where w.kind = 'developer'
               and faucet_held(w.id, null) > greatest(faucet_wallet_balance(w.id), 0)) as over_reserved,
            (select count(*)::int from payouts p
               where (select count(*) from balance_holds h where h.request_id = 'payout:' || p.id and h.amount = p.amount
                        and h.status = case p.status when 'paid' then 'settled' when 'pending' then 'active'
                                                      when 'processing' then 'active' else 'released' end) <> 1) as hold_mismatch`,
  );
  expect(row).toEqual({ non_positive: 0, doubly_open: 0, over_reserved: 0, hold_mismatch: 0 });
}

describe('POST /v1/admin/payouts/run-mock: the threshold', () => {
  it.each([
    ['zero', '0.00000000'],
    ['negative', '-1.00000000'],
    ['negative dust', '-0.00000001'],
    ['nine decimals', '1.000000001'],
    ['seven decimals', '1.0000000'],
    ['no decimals', '10'],
    ['thirteen integer digits', '9999999999999.00000000'],
    ['an exponent', '1e3'],
    ['NaN', 'NaN'],
    ['Infinity', 'Infinity'],
    ['a word', 'lots'],
    ['empty', ''],
    ['padded', ' 1.00000000'],
    ['a comma', '1,00000000'],
    ['hexadecimal', '0x10.00000000'],
    ['a JSON number', 100],
    ['a float', 0.5],
    ['zero as a number', 0],
    ['null', null],
    ['a boolean', true],
    ['an object', { usd: '1.00000000' }],
    ['an array', ['1.00000000']],
  ])('%s → 400 invalid_request in the error envelope, nothing created', async (_name, threshold) => {
    await developers('3.00000000');
    const before = await sql<{ n: number }>(testEnv, 'select count(*)::int as n from payouts');
    const response = await admin('/v1/admin/payouts/run-mock', { threshold_usd: threshold }, { 'x-request-id': 'req-attacker-threshold' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'invalid_request', request_id: 'req-attacker-threshold' } });
    expect(await sql(testEnv, 'select count(*)::int as n from payouts')).toEqual(before);
  });

  it('a body that is not the request → 400, never a 500', async () => {
    const bodies: RequestInit[] = [
      { body: '{"threshold_usd": "1.00000000"', headers: { 'content-type': 'application/json' } },
      { body: 'null', headers: { 'content-type': 'application/json' } },
      { body: '["1.00000000"]', headers: { 'content-type': 'application/json' } },
      { body: '{}', headers: { 'content-type': 'application/json' } },
      { body: '{"threshold_usd":"1.00000000","dry_run":true}', headers: { 'content-type': 'application/json' } },
      { body: 'threshold_usd=1.00000000', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      {},
    ];
    for (const init of bodies) {
      const response = await call(api(), testEnv, '/v1/admin/payouts/run-mock', { method: 'POST', token: adminToken, ...init });
      expect(response.status, `${init.body}`).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    }
    await expectReconciledAndAudited(testEnv);
  });

  it('absurd thresholds are valid amounts nobody reaches: 201 with nothing created', async () => {
    const [rich] = await developers('999999.00000000');
    for (const threshold of ['99999999999.99999999', '999999999999.99999999', '1000000.00000000']) {
      expect(await created(await runMock(threshold))).toEqual([]);
    }
    expect(await wallet(rich!)).toEqual({ balance: '999999.00000000', available: '999999.00000000' });
    await expectReconciledAndAudited(testEnv);
  });

  it('the smallest threshold pays exactly what is available: never zero, never held money, never a debt', async () => {
    const [plain, partlyHeld, fullyHeld, expiredHold, dust, empty, indebted] = await developers(
      '5.00000000',
      '5.00000000',
      '5.00000000',
      '5.00000000',
      '0.00000001',
      '0.00000000',
      '1.00000000',
    );
    const hold = (walletId: string, amount: string, expiresIn: string) =>
      sql(
        testEnv,
        `insert into balance_holds (wallet_id, request_id, amount, expires_at) values ($1, 'attacker-hold:' || gen_random_uuid(), $2, now() + $3::interval)`,
        [walletId, amount, expiresIn],
      );
    await hold(partlyHeld!, '2.00000000', '1 hour');
    await hold(fullyHeld!, '5.00000000', '1 hour');
    await hold(expiredHold!, '2.00000000', '-1 second');
    // A wallet below zero (a receivable, as a clawback leaves it) has nothing to pay out.
    await sql(
      testEnv,
      `select faucet_post_receivable_debit('revenue_clawback', 'attacker-debt:' || gen_random_uuid(), null, 'test debt', '{}'::jsonb,
                                           $1::uuid, faucet_system_wallet('platform_adjustments'), 3)`,
      [indebted],
    );
    const mine = [plain, partlyHeld, fullyHeld, expiredHold, dust, empty, indebted];
    const payouts = (await created(await runMock('0.00000001'))).filter((payout) => mine.includes(payout.wallet_id));
    expect(payouts.map((payout) => [payout.wallet_id, payout.amount_usd]).sort()).toEqual(
      [
        [plain, '5.00000000'],
        [partlyHeld, '3.00000000'],
        [expiredHold, '5.00000000'],
        [dust, '0.00000001'],
      ].sort(),
    );
    for (const walletId of mine) expect((await wallet(walletId!)).available.startsWith('-')).toBe(false);
    expect((await wallet(indebted!)).balance).toBe('-2.00000000');
    await expectPayoutInvariants();
    await expectReconciledAndAudited(testEnv);
  });
});

describe('the transitions: what is not a request', () => {
  it('bodies that are not the request → 400, ids that are no payout → 404, never a 500; nothing changes', async () => {
    const [payout] = await pendingPayouts(1);
    const json = { 'content-type': 'application/json' };
    const bad: [Action, RequestInit][] = [
      ['mark-paid', { body: 'null', headers: json }],
      ['mark-paid', { body: '[]', headers: json }],
      ['mark-paid', { body: '{"operator_note": 5}', headers: json }],
      ['mark-paid', { body: '{"operator_note": "ok", "amount_usd": "1.00000000"}', headers: json }],
      ['mark-paid', { body: '{"operator_note":', headers: json }],
      ['mark-paid', { body: 'paid, trust me', headers: { 'content-type': 'text/plain' } }],
      ['mark-paid', { body: '{"operator_note": "ok"}' }],
      ['approve', { body: JSON.stringify({ operator_note: 'x'.repeat(1001) }), headers: json }],
      ['approve', { body: '{"operator_note": "ok", "status": "paid"}', headers: json }],
      ['approve', {}],
      ['cancel', { body: '{"operator_note": null}', headers: json }],
      ['reject', { body: 'operator_note=ok', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
    ];
    for (const [action, init] of bad) {
      const response = await call(api(), testEnv, `/v1/admin/payouts/${payout!.id}/${action}`, {
        method: 'POST',
        token: adminToken,
        ...init,
      });
      expect(response.status, `${action} ${init.body}`).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    }
    for (const id of ['not-a-uuid', crypto.randomUUID(), '00000000-0000-0000-0000-000000000000', `${payout!.id}x`, '%27%20or%201%3D1--']) {
      for (const action of actions) expect((await act(id, action)).status, `${action} ${id}`).toBe(404);
    }
    for (const query of ['limit=0', 'limit=501', 'limit=-1', 'limit=abc', 'status=lost', 'status=']) {
      expect((await call(api(), testEnv, `/v1/admin/payouts?${query}`, { token: adminToken })).status, query).toBe(400);
    }
    await expectMoved(payout!, { status: 'pending', audit: [] });
    await expectReconciledAndAudited(testEnv);
  });
});

describe('payout runs at once', () => {
  it('eight runs at once reserve each wallet once, for exactly what it holds', async () => {
    const balances = Array.from({ length: 12 }, (_, index) => `${index + 1}.${String(index).padStart(8, '0')}`);
    const wallets = await developers(...balances);
    const runs = await Promise.all(Array.from({ length: 8 }, () => runMock('0.00000001')));
    const mine = (await Promise.all(runs.map(created))).flat().filter((payout) => wallets.includes(payout.wallet_id));
    expect(mine.map((payout) => payout.wallet_id).sort()).toEqual([...wallets].sort());
    for (const [index, walletId] of wallets.entries()) {
      expect(mine.find((payout) => payout.wallet_id === walletId)!.amount_usd).toBe(balances[index]);
      expect(await wallet(walletId)).toEqual({ balance: balances[index], available: '0.00000000' });
    }
    await expectPayoutInvariants();
    await expectReconciledAndAudited(testEnv);
  });

  it('runs racing a cancel, new earnings and an approval of the same wallet never reserve more than it holds', async () => {
    for (let round = 0; round < 4; round++) {
      const [walletId] = await developers('10.00000000');
      const [first] = (await created(await runMock('10.00000000'))).filter((payout) => payout.wallet_id === walletId);
      await Promise.all([
        runMock('0.00000001'),
        act(first!.id, round % 2 === 0 ? 'cancel' : 'reject'),
        fund(database, walletId!, '2.50000000'),
        runMock('0.00000001'),
        act(first!.id, 'approve'),
        runMock('0.00000001'),
      ]);
      const open = await sql<{ amount: string }>(
        testEnv,
        `select amount::text from payouts where wallet_id = $1 and status in ('pending', 'processing')`,
        [walletId],
      );
      expect(open.length).toBeLessThanOrEqual(1);
      const { balance, available } = await wallet(walletId!);
      expect(balance).toBe('12.50000000');
      expect(units(available)).toBeGreaterThanOrEqual(0n);
      expect(units(open[0]?.amount ?? '0.00000000') + units(available)).toBe(units(balance));
    }
    await expectPayoutInvariants();
    await expectReconciledAndAudited(testEnv);
  });
});

/** The documented state machine: what one action does to a payout of a wallet that covers it. */
function step(status: Status, action: Action): { response: 200 | 409; status: Status; audit?: string } {
  if (action === 'approve' && status === 'pending') return { response: 200, status: 'processing', audit: 'payout.approved' };
  if (action === 'mark-paid' && status === 'processing') return { response: 200, status: 'paid', audit: 'payout.paid' };
  if (action === 'cancel' || action === 'reject') {
    const closed = action === 'cancel' ? 'cancelled' : 'rejected';
    if (status === 'pending') return { response: 200, status: closed, audit: `payout.${closed}` };
    if (status === closed) return { response: 200, status }; // the documented idempotent repeat
  }
  return { response: 409, status };
}

function play(start: Status, sequence: Action[]) {
  let status = start;
  const responses: number[] = [];
  const audit: string[] = [];
  for (const action of sequence) {
    const next = step(status, action);
    responses.push(next.response);
    if (next.audit) audit.push(next.audit);
    status = next.status;
  }
  return { status, responses, audit };
}

function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((item, index) => permutations([...items.slice(0, index), ...items.slice(index + 1)]).map((rest) => [item, ...rest]));
}

/** `count` pending payouts, each on a wallet of its own holding a distinct amount. */
async function pendingPayouts(count: number): Promise<Payout[]> {
  const balances = Array.from({ length: count }, (_, index) => `${100 + index}.12345678`);
  const wallets = await developers(...balances);
  const mine = (await created(await runMock('100.00000000'))).filter((payout) => wallets.includes(payout.wallet_id));
  expect(mine).toHaveLength(count);
  return wallets.map((walletId) => mine.find((payout) => payout.wallet_id === walletId)!);
}

/** What a payout moved, against what the state machine says it should have: money, hold, audit trail. */
async function expectMoved(payout: Payout, expected: { status: Status; audit: string[] }) {
  const [row] = await sql<{ status: string; hold: string; transactions: number; audit: string[] | null }>(
    testEnv,
    `select (select status from payouts where id = $1) as status,
            (select string_agg(status || ' ' || amount::text, ',') from balance_holds where request_id = 'payout:' || $1::text) as hold,
            (select count(*)::int from ledger_transactions where kind = 'payout' and idempotency_key = 'payout:' || $1::text) as transactions,
            (select array_agg(action order by id) from audit_logs where target_type = 'payout' and target_id = $1::text
               and action <> 'payout.created') as audit`,
    [payout.id],
  );
  const open = expected.status === 'pending' || expected.status === 'processing';
  const holdStatus = open ? 'active' : expected.status === 'paid' ? 'settled' : 'released';
  expect({ ...row, audit: row!.audit ?? [] }).toEqual({
    status: expected.status,
    hold: `${holdStatus} ${payout.amount_usd}`,
    transactions: expected.status === 'paid' ? 1 : 0,
    audit: expected.audit,
  });
  const balance = expected.status === 'paid' ? '0.00000000' : payout.amount_usd;
  expect(await wallet(payout.wallet_id)).toEqual({ balance, available: open ? '0.00000000' : balance });
}

async function expectStatuses(responses: Response[], expected: number[]) {
  for (const [index, response] of responses.entries()) {
    expect(response.status).toBe(expected[index]);
    if (response.status === 409) expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_state');
  }
}

describe('approve, mark-paid, cancel and reject in every order', () => {
  it('every sequence of three actions answers and moves money as the state machine says', async () => {
    const sequences = actions.flatMap((a) => actions.flatMap((b) => actions.map((c) => [a, b, c])));
    const payouts = await pendingPayouts(sequences.length);
    await Promise.all(
      sequences.map(async (sequence, index) => {
        const payout = payouts[index]!;
        const responses: Response[] = [];
        for (const action of sequence) responses.push(await act(payout.id, action));
        const expected = play('pending', sequence);
        await expectStatuses(responses, expected.responses);
        await expectMoved(payout, expected);
      }),
    );
    await expectPayoutInvariants();
    await expectReconciledAndAudited(testEnv);
  });

  it('every pair and triple at once, from pending and from processing: the outcome of one order, money moved once', async () => {
    const pairs = actions.flatMap((a, index) => actions.slice(index).map((b) => [a, b]));
    const triples = [
      ['approve', 'mark-paid', 'cancel'],
      ['approve', 'cancel', 'reject'],
      ['mark-paid', 'cancel', 'reject'],
      ['approve', 'mark-paid', 'reject'],
    ] as Action[][];
    const scenarios = (['pending', 'processing'] as const).flatMap((start) =>
      [...pairs, ...triples].map((racers) => ({ start, racers: racers as Action[] })),
    );
    const payouts = await pendingPayouts(scenarios.length);
    await Promise.all(
      scenarios.map(async ({ start, racers }, index) => {
        const payout = payouts[index]!;
        const before: string[] = [];
        if (start === 'processing') {
          expect((await act(payout.id, 'approve')).status).toBe(200);
          before.push('payout.approved');
        }
        const responses = await Promise.all(racers.map((action) => act(payout.id, action)));
        const [row] = await sql<{ status: Status }>(testEnv, 'select status from payouts where id = $1', [payout.id]);
        // Some order of the racers explains both every answer and the final state.
        const orders = permutations(racers.map((action, position) => ({ action, position }))).map((order) => {
          const played = play(
            start,
            order.map((racer) => racer.action),
          );
          const byPosition: number[] = [];
          for (const [step, racer] of order.entries()) byPosition[racer.position] = played.responses[step]!;
          return { ...played, byPosition };
        });
        const answered = responses.map((response) => response.status);
        const explained = orders.find((order) => order.status === row!.status && order.byPosition.join() === answered.join());
        expect(explained, `${start} ${racers.join('+')}: ${answered.join()} → ${row!.status}`).toBeDefined();
        await expectStatuses(responses, explained!.byPosition);
        await expectMoved(payout, { status: explained!.status, audit: [...before, ...explained!.audit] });
      }),
    );
    await expectPayoutInvariants();
    await expectReconciledAndAudited(testEnv);
  });

  it('each action six times at once, from pending and from processing: one takes effect, the rest are 409 or its idempotent repeat', async () => {
    const scenarios = (['pending', 'processing'] as const).flatMap((start) => actions.map((action) => ({ start, action })));
    const payouts = await pendingPayouts(scenarios.length);
    await Promise.all(
      scenarios.map(async ({ start, action }, index) => {
        const payout = payouts[index]!;
        if (start === 'processing') expect((await act(payout.id, 'approve')).status).toBe(200);
        const responses = await Promise.all(Array.from({ length: 6 }, () => act(payout.id, action)));
        const expected = play(start, Array(6).fill(action));
        await expectStatuses(
          responses.sort((a, b) => a.status - b.status),
          [...expected.responses].sort((a, b) => a - b),
        );
        await expectMoved(payout, {
          status: expected.status,
          audit: [...(start === 'processing' ? ['payout.approved'] : []), ...expected.audit],
        });
      }),
    );
    await expectPayoutInvariants();
    await expectReconciledAndAudited(testEnv);
  });
});
