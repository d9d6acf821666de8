/**
 * The batched booking flush: many settled calls in one statement book exactly what the
 * per-call bookings would, once per money key, each element booked or refused on its own, and a
 * flush that fails half-way writes nothing and books everything once when retried.
 */
import { dinero, EUR } from 'dinero.js/bigint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, sql, type TestEnv } from '../../test/harness.ts';
import {
  balanceOf,
  chargeOf,
  createTestUser,
  fund,
  ledgerViolations,
  openLedgerDatabase,
  platformCall,
  type LedgerTestDatabase,
  type TestUser,
} from '../../test/ledger-kit.ts';
import { auditGatewayCalls, auditUpstreamCalls } from '../calls/upstream-audit.ts';
import { addUsd, formatUsd, parseWireAmount, usdFromUnits, type Usd } from '../money/index.ts';
import { FaucetError } from '../wire/errors.ts';
import { bookUsage, type BookUsageInput } from './book-usage.ts';
import { bookUsageBatch, type BookUsageBatchResult } from './book-usage-batch.ts';
import { reserveHold } from './holds.ts';
import { reconcileLedger } from './reconcile.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 12);
});
afterAll(async () => {
  await database.close();
});

/** A gateway call as the authorize statement leaves it (in flight, its hold reserved), ready to be booked. */
async function authorizedCall(user: TestUser, index: number, callId = crypto.randomUUID()): Promise<BookUsageInput> {
  const moneyKey = `call:${callId}`;
  const rated = platformCall(100 * (index + 1), 50 * (index + 1));
  await sql(
    testEnv,
    `insert into gateway_calls (id, money_key, client_request_id, fingerprint, app_id, end_user_id, feature_key, route_mode,
                                provider, model, bound_input_tokens, bound_output_tokens, status, deadline_at)
     values ($1, $2, $3, 'f', $4, $5, 'chat', 'platform', 'mock', 'echo', $6, $7, 'in_flight', now() + interval '1 hour')`,
    [callId, moneyKey, `client-${index}`, user.appId, user.endUserId, rated.inputTokens, rated.outputTokens],
  );
  const hold = await reserveHold(database.db, { endUserId: user.endUserId, requestId: moneyKey, amount: parseWireAmount('0.05000000') });
  expect(hold.outcome).toBe('reserved');
  return {
    requestId: moneyKey,
    clientRequestId: `client-${index}`,
    callId,
    appId: user.appId,
    endUserId: user.endUserId,
    featureKey: 'chat',
    rated,
    metadata: { source: 'test' },
  };
}

async function authorizedCalls(user: TestUser, count: number): Promise<BookUsageInput[]> {
  const calls: BookUsageInput[] = [];
  for (let index = 0; index < count; index++) calls.push(await authorizedCall(user, index));
  return calls;
}

const retailOf = (bookings: BookUsageInput[]): Usd => addUsd(...bookings.map((booking) => booking.rated.retailUsd));
const outcomes = (results: BookUsageBatchResult[]) => results.map((result) => result.outcome);
const reasons = (results: BookUsageBatchResult[]) => results.map((result) => (result.outcome === 'refused' ? result.reason : null));

/** The ledger agrees with itself and with what was paid upstream for the calls booked so far. */
async function expectBooksClean(booked: BookUsageInput[]): Promise<void> {
  expect((await reconcileLedger(database.db)).ok).toBe(true);
  expect(await ledgerViolations(testEnv)).toEqual({ unbalanced: 0, mismatched: 0, negative: 0 });
  const reported = booked.map((booking) => ({
    callId: booking.callId!,
    inputTokens: booking.rated.inputTokens,
    outputTokens: booking.rated.outputTokens,
  }));
  const upstream = await auditUpstreamCalls(database.db, reported);
  expect(upstream).toMatchObject({ ok: true, unbilledCalls: 0, unbilledTokens: 0, doubleBilledCalls: 0 });
  expect(await auditGatewayCalls(database.db, 60)).toMatchObject({ ok: true, unbilledCalls: 0 });
}

/** Everything a user's calls left in the books, per call (by client request id), without ids. */
async function booksOf(user: TestUser) {
  return sql<{ call: string; call_status: string; hold_status: string; event: string; entries: string; txn: string }>(
    testEnv,
    `select g.client_request_id as call, g.status as call_status, h.status as hold_status,
            (to_jsonb(u) - array['id', 'request_id', 'call_id', 'end_user_id', 'ledger_transaction_id', 'created_at'])::text as event,
            (select jsonb_agg(jsonb_build_array(w.kind, e.amount::text) order by w.kind)::text
               from ledger_entries e join wallets w on w.id = e.wallet_id where e.transaction_id = u.ledger_transaction_id) as entries,
            (select jsonb_build_object('kind', t.kind, 'request_id', t.request_id, 'metadata', t.metadata)::text
               from ledger_transactions t where t.id = u.ledger_transaction_id) as txn
       from gateway_calls g
       left join usage_events u on u.request_id = g.money_key
       left join balance_holds h on h.request_id = g.money_key
      where g.end_user_id = $1 order by g.client_request_id`,
    [user.endUserId],
  );
}

async function countsOf(requestIds: string[]) {
  const [row] = await sql<{ events: number; transactions: number; entries: number }>(
    testEnv,
    `select (select count(*) from usage_events where request_id = any($1))::int as events,
            (select count(*) from ledger_transactions where idempotency_key = any(select 'usage:' || unnest($1::text[])))::int as transactions,
            (select count(*) from ledger_entries e join ledger_transactions t on t.id = e.transaction_id
              where t.idempotency_key = any(select 'usage:' || unnest($1::text[])))::int as entries`,
    [requestIds],
  );
  return row!;
}

describe('bookUsageBatch', () => {
  it('books a batch of 20 calls exactly as 20 single bookings do on a twin wallet', async () => {
    const single = await createTestUser(testEnv);
    const batched = await createTestUser(testEnv);
    await fund(database, single.walletId, '1.00000000');
    await fund(database, batched.walletId, '1.00000000');
    const singleCalls = await authorizedCalls(single, 20);
    const batchCalls = await authorizedCalls(batched, 20);

    for (const booking of singleCalls) expect((await bookUsage(database.db, booking)).outcome).toBe('booked');
    const results = await bookUsageBatch(database.db, batchCalls);

    expect(outcomes(results)).toEqual(Array(20).fill('booked'));
    expect(results.map((result) => result.requestId)).toEqual(batchCalls.map((booking) => booking.requestId));
    const balance = await balanceOf(testEnv, batched.walletId);
    expect(balance).toBe(await balanceOf(testEnv, single.walletId));
    expect(formatUsd(addUsd(parseWireAmount(balance), retailOf(batchCalls)))).toBe('1.00000000');
    const books = await booksOf(batched);
    expect(books).toEqual(await booksOf(single));
    expect(books.every((row) => row.call_status === 'settled' && row.hold_status === 'settled' && row.event !== null)).toBe(true);
    // Each result carries its own booking's amounts.
    for (const [index, result] of results.entries()) {
      if (result.outcome !== 'booked') continue;
      expect(formatUsd(result.retailUsd)).toBe(formatUsd(batchCalls[index]!.rated.retailUsd));
    }
    await expectBooksClean([...singleCalls, ...batchCalls]);
  });

  it('replays a flushed batch as already_booked: the same bookings returned, nothing written', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const calls = await authorizedCalls(user, 10);
    const first = await bookUsageBatch(database.db, calls);
    expect(outcomes(first)).toEqual(Array(10).fill('booked'));
    const balance = await balanceOf(testEnv, user.walletId);
    const counts = await countsOf(calls.map((booking) => booking.requestId));
    expect(counts.events).toBe(10);

    const replay = await bookUsageBatch(database.db, calls);
    expect(outcomes(replay)).toEqual(Array(10).fill('already_booked'));
    expect(replay.map((result) => result.outcome !== 'refused' && result.usageEventId)).toEqual(
      first.map((result) => result.outcome !== 'refused' && result.usageEventId),
    );
    expect(await balanceOf(testEnv, user.walletId)).toBe(balance);
    expect(await countsOf(calls.map((booking) => booking.requestId))).toEqual(counts);
    expect(formatUsd(addUsd(parseWireAmount(balance), retailOf(calls)))).toBe('1.00000000');
    await expectBooksClean(calls);
  });

  it('books only the calls an earlier single booking (or an earlier element) did not', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const calls = await authorizedCalls(user, 10);
    const earlier = await Promise.all([0, 4, 9].map((index) => bookUsage(database.db, calls[index]!)));
    // The same call twice in one flush is booked once.
    const results = await bookUsageBatch(database.db, [...calls, calls[2]!]);
    expect(outcomes(results)).toEqual([
      'already_booked',
      'booked',
      'booked',
      'booked',
      'already_booked',
      'booked',
      'booked',
      'booked',
      'booked',
      'already_booked',
      'already_booked',
    ]);
    const ids = (index: number) => {
      const result = results[index]!;
      return result.outcome === 'refused' ? null : result.usageEventId;
    };
    expect([ids(0), ids(4), ids(9)]).toEqual(earlier.map((booking) => (booking.outcome === 'booked' ? booking.usageEventId : null)));
    expect(ids(10)).toBe(ids(2));
    expect(await countsOf(calls.map((booking) => booking.requestId))).toMatchObject({ events: 10, transactions: 10 });
    expect(formatUsd(addUsd(parseWireAmount(await balanceOf(testEnv, user.walletId)), retailOf(calls)))).toBe('1.00000000');
    await expectBooksClean(calls);
  });

  it('refuses the invalid elements alone, writing nothing for them; a retry books each of them once', async () => {
    const user = await createTestUser(testEnv);
    const poor = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    await fund(database, poor.walletId, '0.00010000');
    const [ok1, unknownCall, badSum, ok2, euro] = await authorizedCalls(user, 5);
    // The call this booking names was never authorized (no such gateway call for its money key).
    const ghostId = crypto.randomUUID();
    const ghost: BookUsageInput = { ...unknownCall!, requestId: `call:${ghostId}`, callId: ghostId };
    const broke: BookUsageInput = {
      requestId: `local:${crypto.randomUUID()}`,
      appId: poor.appId,
      endUserId: poor.endUserId,
      featureKey: 'chat',
      rated: chargeOf('1.00000000'),
    };
    const badRated = { ...badSum!.rated, retailUsd: addUsd(badSum!.rated.retailUsd, usdFromUnits(1n)) };
    const inEuro = { ...euro!.rated, retailUsd: dinero({ amount: 1n, currency: EUR, scale: 8n }) as unknown as Usd };
    const batch = [ok1!, ghost, { ...badSum!, rated: badRated }, ok2!, { ...euro!, rated: inEuro }, broke];

    const results = await bookUsageBatch(database.db, batch);
    expect(outcomes(results)).toEqual(['booked', 'refused', 'refused', 'booked', 'refused', 'refused']);
    expect(reasons(results)).toEqual([null, 'not_found', 'invalid_request', null, 'invalid_request', 'insufficient_balance']);
    expect(results[4]).toMatchObject({ message: expect.stringMatching(/EUR, not USD/) });
    const refusedKeys = [ghost, badSum!, euro!, broke].map((booking) => booking.requestId);
    expect(await countsOf(refusedKeys)).toEqual({ events: 0, transactions: 0, entries: 0 });
    expect(await balanceOf(testEnv, poor.walletId)).toBe('0.00010000');
    const [pending] = await sql<{ active_holds: number; in_flight: number }>(
      testEnv,
      `select (select count(*) from balance_holds where request_id = any($1) and status = 'active')::int as active_holds,
              (select count(*) from gateway_calls where money_key = any($1) and status = 'in_flight')::int as in_flight`,
      [[badSum!.requestId, euro!.requestId, unknownCall!.requestId]],
    );
    expect(pending).toEqual({ active_holds: 3, in_flight: 3 });
    await expectBooksClean([ok1!, ok2!]);

    // The causes removed (the call authorized, the amounts rated right, the wallet funded): the same
    // flush again books the refused elements once and nothing twice.
    await sql(
      testEnv,
      `insert into gateway_calls (id, money_key, client_request_id, fingerprint, app_id, end_user_id, feature_key, route_mode,
                                  provider, model, bound_input_tokens, bound_output_tokens, status, deadline_at)
       values ($1, $2, 'client-ghost', 'f', $3, $4, 'chat', 'platform', 'mock', 'echo', 1000, 1000, 'in_flight', now() + interval '1 hour')`,
      [ghostId, ghost.requestId, user.appId, user.endUserId],
    );
    await fund(database, poor.walletId, '1.00000000');
    const retry = await bookUsageBatch(database.db, [ok1!, ghost, badSum!, ok2!, euro!, broke]);
    expect(outcomes(retry)).toEqual(['already_booked', 'booked', 'booked', 'already_booked', 'booked', 'booked']);
    const all = [ok1!, ghost, badSum!, ok2!, euro!, broke];
    expect(await countsOf(all.map((booking) => booking.requestId))).toMatchObject({ events: 6, transactions: 6 });
    expect(await balanceOf(testEnv, poor.walletId)).toBe('0.00010000');
    await expectBooksClean([ok1!, ghost, badSum!, ok2!, euro!]);
  });

  it('a flush that fails half-way writes nothing; the retry books each call exactly once', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const calls = await authorizedCalls(user, 8);
    const keys = calls.map((booking) => booking.requestId);
    // The fault strikes the usage record of the call booked in the middle of the flush.
    const middle = [...keys].sort()[4]!;
    const inject = (errcode: string) =>
      sql(
        testEnv,
        `create or replace function fail_one_booking() returns trigger language plpgsql as $$
         begin if new.request_id = '${middle}' then raise exception 'injected fault' using errcode = '${errcode}'; end if; return new; end $$;
         create or replace trigger fail_one_booking before insert on usage_events for each row execute function fail_one_booking()`,
      );
    const removeFault = () => sql(testEnv, 'drop trigger fail_one_booking on usage_events; drop function fail_one_booking()');

    // A fault of the database itself (not a refusal of the element): the whole statement rolls back.
    await inject('XX000');
    try {
      const error = await bookUsageBatch(database.db, calls).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(Error);
    } finally {
      await removeFault();
    }
    expect(await countsOf(keys)).toEqual({ events: 0, transactions: 0, entries: 0 });
    expect(await balanceOf(testEnv, user.walletId)).toBe('1.00000000');
    const [state] = await sql<{ active_holds: number; in_flight: number }>(
      testEnv,
      `select (select count(*) from balance_holds where request_id = any($1) and status = 'active')::int as active_holds,
              (select count(*) from gateway_calls where money_key = any($1) and status = 'in_flight')::int as in_flight`,
      [keys],
    );
    expect(state).toEqual({ active_holds: 8, in_flight: 8 });

    // A refusal of one element (a check violation): only that element is rolled back.
    await inject('23514');
    try {
      const results = await bookUsageBatch(database.db, calls);
      expect(results.filter((result) => result.outcome === 'booked')).toHaveLength(7);
      expect(results.find((result) => result.requestId === middle)).toMatchObject({ outcome: 'refused', reason: 'invalid_request' });
    } finally {
      await removeFault();
    }
    expect(await countsOf(keys)).toMatchObject({ events: 7, transactions: 7 });

    const retry = await bookUsageBatch(database.db, calls);
    expect(retry.filter((result) => result.outcome === 'already_booked')).toHaveLength(7);
    expect(retry.find((result) => result.requestId === middle)?.outcome).toBe('booked');
    expect(await countsOf(keys)).toMatchObject({ events: 8, transactions: 8 });
    expect(formatUsd(addUsd(parseWireAmount(await balanceOf(testEnv, user.walletId)), retailOf(calls)))).toBe('1.00000000');
    await expectBooksClean(calls);
  });

  it('books each call once when the same flush runs four times concurrently', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '2.00000000');
    const calls = await authorizedCalls(user, 30);
    const runs = await Promise.all(Array.from({ length: 4 }, () => bookUsageBatch(database.db, calls)));
    for (const [index, booking] of calls.entries()) {
      const seen = runs.map((run) => run[index]!);
      expect(seen.every((result) => result.requestId === booking.requestId)).toBe(true);
      expect(seen.filter((result) => result.outcome === 'booked')).toHaveLength(1);
      expect(seen.filter((result) => result.outcome === 'already_booked')).toHaveLength(3);
    }
    expect(await countsOf(calls.map((booking) => booking.requestId))).toMatchObject({ events: 30, transactions: 30 });
    expect(formatUsd(addUsd(parseWireAmount(await balanceOf(testEnv, user.walletId)), retailOf(calls)))).toBe('2.00000000');
    await expectBooksClean(calls);
  });

  it('does not deadlock when concurrent flushes name the same two wallets in opposite orders', async () => {
    const alice = await createTestUser(testEnv);
    const bob = await createTestUser(testEnv);
    await fund(database, alice.walletId, '1.00000000');
    await fund(database, bob.walletId, '1.00000000');
    const aliceCalls = await authorizedCalls(alice, 12);
    const bobCalls = await authorizedCalls(bob, 12);
    const runs = await Promise.all([
      bookUsageBatch(database.db, [...aliceCalls, ...bobCalls]),
      bookUsageBatch(database.db, [...bobCalls].reverse().concat([...aliceCalls].reverse())),
      bookUsageBatch(database.db, [...aliceCalls, ...bobCalls]),
    ]);
    const booked = runs.flat().filter((result) => result.outcome === 'booked');
    expect(booked).toHaveLength(24);
    expect(new Set(booked.map((result) => result.requestId)).size).toBe(24);
    expect(runs.flat().filter((result) => result.outcome === 'refused')).toEqual([]);
    await expectBooksClean([...aliceCalls, ...bobCalls]);
  });

  it('refuses a money key booked for another end user as a conflict, and leaves that booking alone', async () => {
    const alice = await createTestUser(testEnv);
    const bob = await createTestUser(testEnv);
    await fund(database, alice.walletId, '1.00000000');
    await fund(database, bob.walletId, '1.00000000');
    const requestId = `local:${crypto.randomUUID()}`;
    const mine = { requestId, appId: alice.appId, endUserId: alice.endUserId, featureKey: 'chat', rated: chargeOf('0.10000000') };
    expect((await bookUsage(database.db, mine)).outcome).toBe('booked');
    const [result] = await bookUsageBatch(database.db, [{ ...mine, endUserId: bob.endUserId }]);
    expect(result).toMatchObject({ outcome: 'refused', reason: 'conflict' });
    expect(JSON.stringify(result)).not.toContain('0.10000000');
    expect(await balanceOf(testEnv, bob.walletId)).toBe('1.00000000');
    expect(await balanceOf(testEnv, alice.walletId)).toBe('0.90000000');
    // A booking may close only its own call: one naming Alice's call under Bob is refused too.
    const [aliceCall] = await authorizedCalls(alice, 1);
    const [stolen] = await bookUsageBatch(database.db, [{ ...aliceCall!, endUserId: bob.endUserId }]);
    expect(stolen).toMatchObject({ outcome: 'refused', reason: 'not_found' });
    const error = await bookUsage(database.db, { ...aliceCall!, endUserId: bob.endUserId }).catch((caught: unknown) => caught);
    expect(FaucetError.isInstance(error) && error.code).toBe('not_found');
    expect(await balanceOf(testEnv, bob.walletId)).toBe('1.00000000');
  });

  it('books into the wallet it was given only that wallet owner’s bookings (the shared booking’s own guard)', async () => {
    const alice = await createTestUser(testEnv);
    const bob = await createTestUser(testEnv);
    await fund(database, alice.walletId, '1.00000000');
    const requestId = `local:${crypto.randomUUID()}`;
    const element = byokElement(bob, requestId, '0.10000000');
    const rows = await sql<{ outcome: string; reason: string }>(
      testEnv,
      `select outcome, reason from faucet_book_usage_locked($1, 1, array[jsonb_populate_record(null::faucet_usage_booking, $2::jsonb)])`,
      [alice.walletId, JSON.stringify(element)],
    );
    expect(rows).toEqual([{ outcome: 'refused', reason: 'invalid_request' }]);
    expect(await countsOf([requestId])).toEqual({ events: 0, transactions: 0, entries: 0 });
    expect(await balanceOf(testEnv, alice.walletId)).toBe('1.00000000');
  });

  it('refuses malformed elements one by one and a batch that is not an array or too large as a whole', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const [good] = await authorizedCalls(user, 1);
    const [valid] = await bookUsageBatch(database.db, [good!]);
    expect(valid!.outcome).toBe('booked');
    const base = { request_id: 'local:x', app_id: user.appId, end_user_id: user.endUserId, feature_key: 'chat', route_mode: 'byok' };
    const whole = byokElement(user, 'local:x', '0.000000001');
    // A well-formed element beside them is booked: a value that fails its cast refuses only its own.
    const fine = byokElement(user, `local:${crypto.randomUUID()}`, '0.00000001');
    const rows = await sql<{ ordinal: number; outcome: string; reason: string; message: string; retail_usd: string | null }>(
      testEnv,
      'select ordinal, outcome, reason, message, retail_usd::text from faucet_book_usage_batch($1::jsonb) order by ordinal',
      [JSON.stringify(['not an object', { ...base, smuggled: true }, base, whole, { ...whole, input_tokens: 'many' }, fine])],
    );
    // Each element's amounts are its own, whichever position is the first one booked.
    expect(rows.map((row) => row.retail_usd)).toEqual([null, null, null, '0.00000000', null, '0.00000001']);
    expect(rows.map((row) => [row.ordinal, row.outcome, row.reason])).toEqual([
      [1, 'refused', 'invalid_request'],
      [2, 'refused', 'invalid_request'],
      [3, 'refused', 'invalid_request'],
      [4, 'refused', 'invalid_request'],
      [5, 'refused', 'invalid_request'],
      [6, 'booked', null],
    ]);
    expect(rows.map((row) => row.message)).toEqual([
      'a booking must be a JSON object',
      'unknown field smuggled',
      'missing field provider',
      expect.stringMatching(/at most 8 decimals/),
      'input_tokens is not a valid integer',
      null,
    ]);
    expect(await countsOf([fine.request_id])).toEqual({ events: 1, transactions: 1, entries: 2 });
    const notArray = await sql(testEnv, `select * from faucet_book_usage_batch('{}'::jsonb)`).catch((caught: unknown) => caught);
    expect(notArray).toMatchObject({ code: '22023' });
    await expect(bookUsageBatch(database.db, Array(1001).fill(good))).rejects.toThrow(RangeError);
    expect(await bookUsageBatch(database.db, [])).toEqual([]);
    expect(await countsOf(['local:x'])).toEqual({ events: 0, transactions: 0, entries: 0 });
  });
});

/** A raw faucet_usage_booking (JSON) of a byok call of `user`, its retail all the developer's. */
function byokElement(user: { appId: string; endUserId: string }, requestId: string, retail: string) {
  return {
    request_id: requestId,
    app_id: user.appId,
    end_user_id: user.endUserId,
    feature_key: 'chat',
    route_mode: 'byok',
    provider: 'openai',
    model: 'gpt-4o-mini',
    input_tokens: 1,
    output_tokens: 1,
    cached_tokens: 0,
    cache_write_tokens: 0,
    audio_input_tokens: 0,
    audio_output_tokens: 0,
    reasoning_tokens: 0,
    estimated: false,
    allow_receivable: false,
    upstream_cost: '0.00000000',
    upstream_payable: '0.00000000',
    retail,
    developer_revenue: retail,
    platform_share: '0.00000000',
  };
}
