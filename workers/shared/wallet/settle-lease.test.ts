/**
 * faucet_settle_lease: a wallet object's flush of leased calls and its lease in one
 * statement. Each call booked exactly once (replays, a fault half-way), a leased call never refused
 * for its client request id, the lease never below what the object may still have reserved, never
 * past what the wallet has, and never anything of another end user.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pool } from '@neondatabase/serverless';
import { createTestEnv, sql, type TestEnv } from '../../test/harness.ts';
import {
  balanceOf,
  createTestUser,
  fund,
  ledgerViolations,
  openLedgerDatabase,
  platformCall,
  type LedgerTestDatabase,
  type TestUser,
} from '../../test/ledger-kit.ts';
import { sweepStaleCalls } from '../calls/sweep-stale-calls.ts';
import { auditGatewayCalls, auditUpstreamCalls } from '../calls/upstream-audit.ts';
import { bookUsage, type BookUsageInput } from '../ledger/book-usage.ts';
import { bookingElement, bookUsageBatch, type BookUsageBatchResult } from '../ledger/book-usage-batch.ts';
import { expireHolds, reserveHold } from '../ledger/holds.ts';
import { reconcileLedger } from '../ledger/reconcile.ts';
import { addUsd, compareUsd, formatUsd, parseWireAmount, subtractUsd, type Usd } from '../money/index.ts';
import { rateUsage } from '../rating/index.ts';
import { flushLease, settleLease, type LeasedCallRecord, type SettleLeaseInput } from './settle-lease.ts';
import { callLogRow } from '../calls/call-log.ts';

let testEnv: TestEnv;
let database: LedgerTestDatabase;
beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 16);
});
afterAll(async () => {
  await database.close();
});

interface LeasedCall {
  record: LeasedCallRecord;
  booking: BookUsageInput;
}

/** A call the wallet object authorized against its lease and settled in its own storage: record and booking. */
function leasedCall(user: TestUser, index: number, clientRequestId = `client-${crypto.randomUUID()}`): LeasedCall {
  const id = crypto.randomUUID();
  const rated = platformCall(100 * (index + 1), 50 * (index + 1));
  const record: LeasedCallRecord = {
    id,
    moneyKey: `call:${id}`,
    clientRequestId,
    fingerprint: 'f',
    appId: user.appId,
    endUserId: user.endUserId,
    featureKey: 'chat',
    routeMode: 'platform',
    provider: 'mock',
    model: 'echo',
    boundInputTokens: rated.inputTokens,
    boundOutputTokens: rated.outputTokens,
    deadlineAt: new Date(Date.now() + 3_600_000),
    createdAt: new Date(),
    developerPricePerMtokUsd: null,
    openFeeUsd: null,
    developerShareBps: 5000,
    platformMarkupBps: null,
    platformFeeBps: null,
    fallbackModels: null,
  };
  const booking: BookUsageInput = {
    requestId: record.moneyKey,
    clientRequestId,
    callId: id,
    appId: user.appId,
    endUserId: user.endUserId,
    featureKey: 'chat',
    rated,
    allowReceivable: true,
    metadata: { source: 'lease-test' },
  };
  return { record, booking };
}

const leasedCalls = (user: TestUser, count: number) => Array.from({ length: count }, (_, index) => leasedCall(user, index));
const leaseKey = () => `lease:wallet-${crypto.randomUUID()}`;
const usd = (value: string) => parseWireAmount(value);
const retailOf = (calls: LeasedCall[]): Usd => addUsd(...calls.map((call) => call.booking.rated.retailUsd));
const outcomes = (results: BookUsageBatchResult[]) => results.map((result) => result.outcome);

function flush(user: TestUser, key: string, calls: LeasedCall[], target: string, keep = true): SettleLeaseInput {
  return {
    endUserId: user.endUserId,
    leaseKey: key,
    calls: calls.map((call) => call.record),
    bookings: calls.map((call) => call.booking),
    target: usd(target),
    keep,
    ttlSeconds: 120,
  };
}

async function leaseRow(key: string) {
  const [row] = await sql<{ amount: string; status: string; expires_at: Date; closed_at: Date | null }>(
    testEnv,
    'select amount::text, status, expires_at, closed_at from balance_holds where request_id = $1',
    [key],
  );
  return row;
}

async function countsOf(calls: LeasedCall[]) {
  const keys = calls.map((call) => call.record.moneyKey);
  const [row] = await sql<{ records: number; settled: number; events: number; transactions: number; entries: number }>(
    testEnv,
    `select (select count(*) from gateway_calls where money_key = any($1))::int as records,
            (select count(*) from gateway_calls where money_key = any($1) and status = 'settled')::int as settled,
            (select count(*) from usage_events where request_id = any($1))::int as events,
            (select count(*) from ledger_transactions where idempotency_key = any(select 'usage:' || unnest($1::text[])))::int as transactions,
            (select count(*) from ledger_entries e join ledger_transactions t on t.id = e.transaction_id
              where t.idempotency_key = any(select 'usage:' || unnest($1::text[])))::int as entries`,
    [keys],
  );
  return row!;
}

/** Balance − every active unexpired hold of the wallet, by SQL (not through the function under test). */
async function availableOf(user: TestUser): Promise<string> {
  const [row] = await sql<{ available: string }>(
    testEnv,
    `select (balance - faucet_held(id, null))::text as available from wallets where id = $1`,
    [user.walletId],
  );
  return row!.available;
}

/** The ledger agrees with itself and every leased call booked is booked once, upstream and in the call records. */
async function expectBooksClean(booked: LeasedCall[]): Promise<void> {
  expect((await reconcileLedger(database.db)).ok).toBe(true);
  expect(await ledgerViolations(testEnv)).toEqual({ unbalanced: 0, mismatched: 0, negative: 0 });
  const reported = booked.map(({ booking }) => ({
    callId: booking.callId!,
    inputTokens: booking.rated.inputTokens,
    outputTokens: booking.rated.outputTokens,
  }));
  expect(await auditUpstreamCalls(database.db, reported)).toMatchObject({ ok: true, unbilledCalls: 0, doubleBilledCalls: 0 });
  expect(await auditGatewayCalls(database.db, 60)).toMatchObject({ ok: true, unbilledCalls: 0 });
}

describe('settleLease: the lease', () => {
  it('grants least(target, available) on renewal, keeps other holds covered, and is respected by later holds', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const other = await reserveHold(database.db, {
      endUserId: user.endUserId,
      requestId: `call:${crypto.randomUUID()}`,
      amount: usd('0.10000000'),
    });
    expect(other.outcome).toBe('reserved');
    const key = leaseKey();

    const first = await settleLease(database.db, flush(user, key, [], '0.50000000'));
    expect(first.results).toEqual([]);
    expect(formatUsd(first.lease.amount)).toBe('0.50000000');
    expect(first.lease.status).toBe('active');
    expect(first.lease.expiresAt.getTime()).toBeGreaterThan(Date.now() + 100_000);
    expect([formatUsd(first.balanceUsd), formatUsd(first.availableUsd)]).toEqual(['1.00000000', '0.40000000']);
    expect(await availableOf(user)).toBe('0.40000000');

    // More than is available: only what is available (balance − the other hold).
    const more = await settleLease(database.db, flush(user, key, [], '5.00000000'));
    expect(formatUsd(more.lease.amount)).toBe('0.90000000');
    expect(formatUsd(more.availableUsd)).toBe('0.00000000');
    // A per-call hold now finds nothing available: the lease is counted like any hold.
    const refused = await reserveHold(database.db, {
      endUserId: user.endUserId,
      requestId: `call:${crypto.randomUUID()}`,
      amount: usd('0.00000001'),
    });
    expect(refused.outcome).toBe('insufficient_balance');

    // The reconciliation report counts it, `ok` unchanged.
    const report = await reconcileLedger(database.db);
    expect(report.ok).toBe(true);
    expect(report.leases.active).toBeGreaterThanOrEqual(1);
    const [leased] = await sql<{ total: string }>(
      testEnv,
      `select coalesce(sum(amount), 0)::numeric(20, 8)::text as total from balance_holds
        where request_id like 'lease:%' and status = 'active' and expires_at > now()`,
    );
    expect(report.leases.leased_usd).toBe(leased!.total);
    expect(await balanceOf(testEnv, user.walletId)).toBe('1.00000000');
  });

  it('keep=true never drops below the old lease less the retail booked now; keep=false recalls to the target', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const key = leaseKey();
    await settleLease(database.db, flush(user, key, [], '0.50000000'));
    const calls = leasedCalls(user, 3);
    const booked = retailOf(calls);

    // A smaller target while calls the object authorized may be in flight: old − booked is kept.
    const kept = await settleLease(database.db, flush(user, key, calls, '0.01000000'));
    expect(outcomes(kept.results)).toEqual(['booked', 'booked', 'booked']);
    expect(formatUsd(kept.lease.amount)).toBe(formatUsd(subtractUsd(usd('0.50000000'), booked)));
    expect(formatUsd(kept.balanceUsd)).toBe(formatUsd(subtractUsd(usd('1.00000000'), booked)));
    expect(formatUsd(kept.availableUsd)).toBe(formatUsd(subtractUsd(kept.balanceUsd, kept.lease.amount)));

    // A recall: down to the target.
    const recalled = await settleLease(database.db, flush(user, key, [], '0.01000000', false));
    expect(formatUsd(recalled.lease.amount)).toBe('0.01000000');
    expect(recalled.lease.status).toBe('active');

    // Release: target 0, keep false: nothing held, available = balance − other holds.
    await reserveHold(database.db, { endUserId: user.endUserId, requestId: `call:${crypto.randomUUID()}`, amount: usd('0.20000000') });
    const released = await settleLease(database.db, flush(user, key, [], '0.00000000', false));
    expect(formatUsd(released.lease.amount)).toBe('0.00000000');
    expect(released.lease.status).toBe('released');
    expect((await leaseRow(key))?.closed_at).not.toBeNull();
    expect(formatUsd(released.availableUsd)).toBe(formatUsd(subtractUsd(released.balanceUsd, usd('0.20000000'))));
    expect(await availableOf(user)).toBe(formatUsd(released.availableUsd));

    // A released lease is renewed on the same key.
    const again = await settleLease(database.db, flush(user, key, [], '0.10000000'));
    expect([formatUsd(again.lease.amount), again.lease.status]).toEqual(['0.10000000', 'active']);
    await expectBooksClean(calls);
  });

  it('an expired lease counts 0 as old amount, is expired by the hold cron, and is reactivated by the next settle', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const key = leaseKey();
    await settleLease(database.db, flush(user, key, [], '0.60000000'));
    await sql(testEnv, `update balance_holds set expires_at = now() - interval '1 second' where request_id = $1`, [key]);
    expect(await availableOf(user)).toBe('1.00000000');
    expect(await expireHolds(database.db)).toBeGreaterThanOrEqual(1);
    expect((await leaseRow(key))?.status).toBe('expired');
    // keep=true with a smaller target: the expired lease no longer reserves anything, so the target rules.
    const renewed = await settleLease(database.db, flush(user, key, [], '0.20000000'));
    expect([formatUsd(renewed.lease.amount), renewed.lease.status]).toEqual(['0.20000000', 'active']);
    expect((await leaseRow(key))?.closed_at).toBeNull();
    expect(await availableOf(user)).toBe('0.80000000');
  });
});

describe("settleLease: under the app's per-end-user limits", () => {
  /** A new app of the demo developer with these limits, and one funded end user of it. */
  async function limitedUser(limits: { day: string | null; month: string | null; rpm?: number }): Promise<TestUser> {
    const demo = await createTestUser(testEnv);
    const [row] = await sql<{ app_id: string; end_user_id: string; wallet_id: string }>(
      testEnv,
      `with app as (insert into apps (developer_id, public_app_id, name, default_feature_key, limit_spend_per_day_usd, limit_spend_per_month_usd,
                                      limit_requests_per_minute)
                    select developer_id, 'app_lease_limits_' || $2, 'Limited', 'chat', $3, $4, $5 from apps where id = $1 returning id),
            feature as (insert into app_features (app_id, feature_key, name, default_model) select id, 'chat', 'Chat', 'mock:echo' from app),
            u as (insert into end_users (app_id, external_user_hash) select id, $2 from app returning id, app_id)
       insert into wallets (kind, end_user_id) select 'user', id from u
       returning end_user_id, id as wallet_id, (select app_id from u) as app_id`,
      [demo.appId, crypto.randomUUID().replace(/-/g, ''), limits.day, limits.month, limits.rpm ?? null],
    );
    const user = { endUserId: row!.end_user_id, walletId: row!.wallet_id, appId: row!.app_id };
    await fund(database, user.walletId, '1.00000000');
    return user;
  }

  async function spendLimitsOf(user: TestUser, key: string, target: string) {
    const [row] = await sql<{ amount: string; spend_limits: unknown }>(
      testEnv,
      `select (s.lease).amount_usd::text as amount, (s.lease).spend_limits from faucet_settle_lease($1, $2, '[]', '[]', $3, true, 120) s`,
      [user.endUserId, key, target],
    );
    return row!;
  }

  it("caps the lease by the room each limit leaves (the limit less this period's bookings) and says so", async () => {
    const user = await limitedUser({ day: '0.30000000', month: '0.50000000' });
    const key = leaseKey();
    const call = leasedCall(user, 0);
    const retail = formatUsd(call.booking.rated.retailUsd);
    await settleLease(database.db, flush(user, key, [call], '0.00000000'));
    const capped = await spendLimitsOf(user, key, '5.00000000');
    const dayRoom = formatUsd(subtractUsd(usd('0.30000000'), call.booking.rated.retailUsd));
    expect(capped.amount).toBe(dayRoom);
    expect(capped.spend_limits).toEqual({
      day: { limit: '0.30000000', room: dayRoom },
      month: { limit: '0.50000000', room: formatUsd(subtractUsd(usd('0.50000000'), usd(retail))) },
    });
    // A target below the room is granted as asked; an app without limits answers none.
    expect((await spendLimitsOf(user, key, '0.01000000')).amount).toBe(dayRoom);
    const free = await createTestUser(testEnv);
    await fund(database, free.walletId, '1.00000000');
    expect(await spendLimitsOf(free, leaseKey(), '0.70000000')).toEqual({ amount: '0.70000000', spend_limits: null });
  });

  it('keeps call slots under a requests-per-minute limit: granted within the window, never below the old less the records written', async () => {
    const user = await limitedUser({ day: null, month: null, rpm: 5 });
    const key = leaseKey();
    const slotsOf = async (calls: LeasedCall[], asked: number) =>
      (await settleLease(database.db, { ...flush(user, key, calls, '0.10000000'), bookings: [], callSlots: asked })).rateLimit as {
        limit: number;
        slots: number;
        window: number[];
      };
    // Asked for 3 of an empty window: 3.
    expect(await slotsOf([], 3)).toEqual({ limit: 5, slots: 3, window: [] });
    // Two of them flushed (their records written, bookings to come), none asked for: the old 3 less
    // the 2 written stays granted (a call the object authorized meanwhile keeps its slot).
    const flushed = [leasedCall(user, 0), leasedCall(user, 1)];
    const kept = await slotsOf(flushed, 0);
    expect(kept.slots).toBe(1);
    expect(kept.window).toHaveLength(2);
    // Asked for more than the window leaves (5 − 2): 3.
    expect((await slotsOf([], 9)).slots).toBe(3);
    // The per-call path counts them: the window (2) + the slots (3) is the limit.
    const [counted] = await sql<{ n: number }>(
      testEnv,
      `select (select count(*) from gateway_calls where end_user_id = $1)::int
            + (select call_slots from balance_holds where request_id = $2) as n`,
      [user.endUserId, key],
    );
    expect(counted!.n).toBe(5);
    // A record written now of a call authorized two minutes ago is outside the window: it held no
    // slot, so only the recent one is taken off the 3 (and the window leaves none to ask for).
    const old = leasedCall(user, 2);
    old.record = { ...old.record, createdAt: new Date(Date.now() - 120_000) };
    expect((await slotsOf([old, leasedCall(user, 3)], 0)).slots).toBe(2);
  });

  it("waits for a per-call authorization holding the end user's row, so the two never count without each other", async () => {
    const user = await limitedUser({ day: '0.30000000', month: null });
    const pool = new Pool({ connectionString: testEnv.DATABASE_URL, max: 1 });
    const client = await pool.connect();
    try {
      await client.query('begin');
      await client.query('select 1 from end_users where id = $1 for no key update', [user.endUserId]);
      let done = false;
      const renewal = settleLease(database.db, flush(user, leaseKey(), [], '0.10000000')).then((result) => {
        done = true;
        return result;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(done).toBe(false);
      await client.query('commit');
      expect(formatUsd((await renewal).lease.amount)).toBe('0.10000000');
    } finally {
      client.release();
      await pool.end();
    }
  });
});

describe("settleLease: a developer key's budget lease", () => {
  /** A developer of their own with an app, one funded end user of it and an active openai key of `budget`. */
  async function keyedUser(budget: string): Promise<{ user: TestUser; keyId: string; developerId: string }> {
    const unique = crypto.randomUUID().replace(/-/g, '');
    const [row] = await sql<{ app_id: string; developer_id: string }>(
      testEnv,
      `with d as (insert into developers (name, email) values ('Keyed', $1) returning id),
            app as (insert into apps (developer_id, public_app_id, name, default_feature_key)
                    select id, 'app_keyed_' || $2, 'Keyed', 'chat' from d returning id, developer_id),
            feature as (insert into app_features (app_id, feature_key, name, default_model) select id, 'chat', 'Chat', 'openai:gpt-4o-mini' from app)
       select id as app_id, developer_id from app`,
      [`keyed-${unique}@example.com`, unique],
    );
    const user = await endUserOf(row!.app_id);
    const [key] = await sql<{ id: string }>(
      testEnv,
      `insert into provider_credentials (owner_type, developer_id, provider, ciphertext, iv, key_version, masked_key, monthly_budget_usd)
       values ('developer', $1, 'openai', 'x', 'x', 1, 'sk-...abcd', $2) returning id`,
      [row!.developer_id, budget],
    );
    return { user, keyId: key!.id, developerId: row!.developer_id };
  }

  async function endUserOf(appId: string): Promise<TestUser> {
    const [row] = await sql<{ end_user_id: string; wallet_id: string }>(
      testEnv,
      `with u as (insert into end_users (app_id, external_user_hash) values ($1, $2) returning id)
       insert into wallets (kind, end_user_id) select 'user', id from u returning end_user_id, id as wallet_id`,
      [appId, crypto.randomUUID().replace(/-/g, '')],
    );
    const user = { endUserId: row!.end_user_id, walletId: row!.wallet_id, appId };
    await fund(database, user.walletId, '1.00000000');
    return user;
  }

  /** A call on the developer_key route with `keyId`, authorized on the lease and settled. */
  function keyCall(user: TestUser, keyId: string, index: number): LeasedCall {
    const call = leasedCall(user, index);
    const rated = rateUsage({
      routeMode: 'developer_key',
      provider: 'openai',
      model: 'gpt-4o-mini',
      inputTokens: 1000 * (index + 1),
      outputTokens: 500,
      estimated: false,
    });
    call.record = { ...call.record, routeMode: 'developer_key', provider: 'openai', model: 'gpt-4o-mini', providerCredentialId: keyId };
    call.booking = { ...call.booking, rated, providerCredentialId: keyId };
    return call;
  }

  const budgetFlush = (user: TestUser, lease: string, calls: LeasedCall[], budgets: Record<string, string>, keep = true) =>
    settleLease(database.db, {
      ...flush(user, lease, calls, '0.10000000', keep),
      budgets: Object.fromEntries(Object.entries(budgets).map(([id, amount]) => [id, usd(amount)])),
    });

  const reserve = async (keyId: string, amount: string) => {
    const [row] = await sql<{ outcome: string }>(testEnv, `select faucet_reserve_credential_budget($1, $2, $3) as outcome`, [
      keyId,
      `call:${crypto.randomUUID()}`,
      amount,
    ]);
    return row!.outcome;
  };

  /** This month's recorded upstream cost of the key plus every reservation that counts (as the per-call check sums them). */
  async function committedOf(keyId: string): Promise<Usd> {
    const [row] = await sql<{ committed: string }>(
      testEnv,
      `select (coalesce((select sum(upstream_cost_usd) from usage_events where provider_credential_id = $1 and created_at >= faucet_month_start(now())), 0)
             + coalesce((select sum(amount) from provider_credential_reservations r where credential_id = $1
                          and (expires_at is null or expires_at > now())
                          and not exists (select 1 from usage_events u where u.request_id = r.request_id)), 0))::numeric(20, 8)::text as committed`,
      [keyId],
    );
    return usd(row!.committed);
  }

  it('leases least(target, room), which the per-call check counts, and takes off the upstream cost booked on the key', async () => {
    const { user, keyId } = await keyedUser('1.00000000');
    const lease = leaseKey();
    const granted = await budgetFlush(user, lease, [], { [keyId]: '0.40000000' });
    expect(granted.keyBudgets[keyId]?.amount).toBe('0.40000000');
    const expiresAt = granted.keyBudgets[keyId]?.expiresAt as number;
    expect(expiresAt).toBeGreaterThan(Date.now() + 100_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 121_000);
    // The per-call path sees it: 0.40 + 0.70 is past the budget, 0.40 + 0.60 is not.
    expect(await reserve(keyId, '0.70000000')).toBe('budget_exceeded');
    expect(await reserve(keyId, '0.60000000')).toBe('reserved');
    // Another end user's object finds no room left.
    const other = await endUserOf(user.appId);
    const otherLease = leaseKey();
    expect((await budgetFlush(other, otherLease, [], { [keyId]: '0.50000000' })).keyBudgets[keyId]).toEqual({
      amount: '0.00000000',
      expiresAt: null,
    });
    // A flush of a call on the key: its upstream cost is booked on the key and taken off the lease, once.
    const call = keyCall(user, keyId, 0);
    const cost = call.booking.rated.upstreamCostUsd;
    expect(compareUsd(cost, usd('0.00000000'))).toBeGreaterThan(0);
    const afterCall = formatUsd(subtractUsd(usd('0.40000000'), cost));
    expect((await budgetFlush(user, lease, [call], { [keyId]: '0.00000000' })).keyBudgets[keyId]?.amount).toBe(afterCall);
    const [event] = await sql<{ provider_credential_id: string; upstream_cost_usd: string }>(
      testEnv,
      'select provider_credential_id, upstream_cost_usd::text from usage_events where request_id = $1',
      [call.record.moneyKey],
    );
    expect(event).toEqual({ provider_credential_id: keyId, upstream_cost_usd: formatUsd(cost) });
    expect((await budgetFlush(user, lease, [call], { [keyId]: '0.00000000' })).keyBudgets[keyId]?.amount).toBe(afterCall);
    // Within the budget all along: recorded cost + reservations.
    expect(formatUsd(await committedOf(keyId))).toBe('1.00000000');
    // A release keeps only what is asked (the calls in flight) and a renewal is granted the room again.
    expect((await budgetFlush(user, lease, [], { [keyId]: '0.05000000' }, false)).keyBudgets[keyId]?.amount).toBe('0.05000000');
    expect(compareUsd(await committedOf(keyId), usd('1.00000000'))).toBeLessThan(0);
    await expectBooksClean([call]);
  });

  it('an expired budget lease no longer counts; a disabled key, or one not of the app developer, gets none', async () => {
    const { user, keyId } = await keyedUser('1.00000000');
    const lease = leaseKey();
    await budgetFlush(user, lease, [], { [keyId]: '0.80000000' });
    expect(await reserve(keyId, '0.30000000')).toBe('budget_exceeded');
    await sql(testEnv, `update provider_credential_reservations set expires_at = now() - interval '1 second' where request_id = $1`, [
      `${lease}:${keyId}`,
    ]);
    expect(await reserve(keyId, '0.90000000')).toBe('reserved');
    // The expired row was cleared by that reservation's housekeeping; the next flush finds 0.10 of room.
    expect((await budgetFlush(user, lease, [], { [keyId]: '0.50000000' })).keyBudgets[keyId]?.amount).toBe('0.10000000');
    // A key of another developer: none, and a record of a call on it is not written.
    const stranger = await keyedUser('5.00000000');
    const smuggled = keyCall(user, stranger.keyId, 1);
    const result = await budgetFlush(user, lease, [smuggled], { [stranger.keyId]: '1.00000000' });
    expect(result.keyBudgets[stranger.keyId]).toEqual({ amount: '0.00000000', expiresAt: null });
    expect(result.results[0]).toMatchObject({ outcome: 'refused', reason: 'invalid_request' });
    expect(await countsOf([smuggled])).toMatchObject({ records: 0, events: 0 });
    // Disabled: the lease is given up and its row deleted.
    await sql(testEnv, `update provider_credentials set status = 'disabled', disabled_at = now() where id = $1`, [keyId]);
    expect((await budgetFlush(user, lease, [], { [keyId]: '0.50000000' })).keyBudgets[keyId]).toEqual({
      amount: '0.00000000',
      expiresAt: null,
    });
    const [rows] = await sql<{ n: number }>(
      testEnv,
      'select count(*)::int as n from provider_credential_reservations where request_id = $1',
      [`${lease}:${keyId}`],
    );
    expect(rows!.n).toBe(0);
  });

  it("is never lent into the next month: it expires at the month's start at the latest", async () => {
    const { user, keyId } = await keyedUser('1.00000000');
    const rows = await sql<{ key_budgets: Record<string, { amount: string; expires_at: number }>; month_end: string }>(
      testEnv,
      `select (s.lease).key_budgets, (extract(epoch from faucet_month_start(now()) + interval '1 month') * 1000)::bigint::text as month_end
         from faucet_settle_lease($1, $2, '[]', '[]', 0.1, true, 3456000, null, $3::jsonb) s`,
      [user.endUserId, leaseKey(), JSON.stringify({ [keyId]: '0.2' })],
    );
    expect(rows[0]!.key_budgets[keyId]).toEqual({ amount: '0.20000000', expires_at: Number(rows[0]!.month_end) });
  });

  it("waits for a per-call reservation holding the key's row, and concurrent leases and reservations never pass the budget", async () => {
    const { user, keyId } = await keyedUser('1.00000000');
    const pool = new Pool({ connectionString: testEnv.DATABASE_URL, max: 1 });
    const client = await pool.connect();
    try {
      await client.query('begin');
      await client.query('select 1 from provider_credentials where id = $1 for no key update', [keyId]);
      let done = false;
      const renewal = budgetFlush(user, leaseKey(), [], { [keyId]: '0.10000000' }).then((result) => {
        done = true;
        return result;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(done).toBe(false);
      await client.query('commit');
      expect((await renewal).keyBudgets[keyId]?.amount).toBe('0.10000000');
    } finally {
      client.release();
      await pool.end();
    }
    // Four objects renewing and twenty per-call reservations at once: no deadlock, never past the budget.
    const users = [user, ...(await Promise.all([0, 1, 2].map(() => endUserOf(user.appId))))];
    const leases = users.map(() => leaseKey());
    // Any error (a deadlock among them) rejects this.
    await Promise.all([
      ...users.flatMap((owner, index) => [0, 1, 2].map(() => budgetFlush(owner, leases[index]!, [], { [keyId]: '0.30000000' }))),
      ...Array.from({ length: 20 }, () => reserve(keyId, '0.05000000')),
    ]);
    expect(compareUsd(await committedOf(keyId), usd('1.00000000'))).toBeLessThanOrEqual(0);
  });

  it('refuses malformed budgets as a whole', async () => {
    const { user, keyId } = await keyedUser('1.00000000');
    const raw = (budgets: string) =>
      sql(testEnv, `select * from faucet_settle_lease($1, 'lease:x', '[]', '[]', 0, true, 60, null, $2::jsonb)`, [
        user.endUserId,
        budgets,
      ]).catch((caught: unknown) => caught);
    for (const budgets of ['[]', '{"nope": "1"}', `{"${keyId}": "-1"}`, `{"${keyId}": "0.000000001"}`, `{"${keyId}": "x"}`]) {
      expect(await raw(budgets)).toMatchObject({ code: '22023' });
    }
    expect(formatUsd(await committedOf(keyId))).toBe('0.00000000');
  });
});

describe('settleLease: the housekeeping around a lease', () => {
  it('the stale-call sweeper books a leased call left in flight at its bound and never touches the lease', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const key = leaseKey();
    const stale = leasedCall(user, 0);
    stale.record = { ...stale.record, deadlineAt: new Date(Date.now() - 3_600_000) };
    // The record arrives with a flush whose booking is not in it (refused, or lost): the call stays in flight.
    const written = await settleLease(database.db, { ...flush(user, key, [stale], '0.50000000'), bookings: [] });
    expect(formatUsd(written.lease.amount)).toBe('0.50000000');
    expect(await countsOf([stale])).toMatchObject({ records: 1, settled: 0, events: 0 });
    const before = await leaseRow(key);

    const swept = await sweepStaleCalls(database.db, testEnv);
    expect(swept.booked).toBeGreaterThanOrEqual(1);
    expect(await countsOf([stale])).toMatchObject({ records: 1, settled: 1, events: 1 });
    expect(await leaseRow(key)).toEqual(before);
    // The object's flush of the same call later: already booked, the lease not reduced for it.
    const late = await settleLease(database.db, flush(user, key, [stale], '0.50000000'));
    expect(outcomes(late.results)).toEqual(['already_booked']);
    expect(formatUsd(late.lease.amount)).toBe('0.50000000');
    expect(await countsOf([stale])).toMatchObject({ events: 1, transactions: 1 });
    await expectBooksClean([stale]);
  });
});

describe('the request log in the flush', () => {
  it('writes each log row once with the flush; a row the table would refuse, or of another end user, is left out and never fails the bookings', async () => {
    const user = await createTestUser(testEnv);
    const other = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const row = (featureKey: string | null, of = user) =>
      callLogRow(
        {
          id: crypto.randomUUID(),
          appId: of.appId,
          endUserId: of.endUserId,
          featureKey: featureKey as string,
          clientRequestId: `client-${crypto.randomUUID()}`,
          provider: 'mock',
          model: 'echo',
          routeMode: null,
          providerCredentialId: null,
          createdAt: new Date().toISOString(),
        },
        { surface: 'chat.completions', requestedModel: 'mock:echo', outcome: 'refused', errorCode: 'app_archived', stream: false },
      );
    const kept = row('chat');
    const refused = row(null);
    // Smuggled into this end user's flush: another end user's row is never written by it.
    const foreign = row('chat', other);
    const flush = {
      endUserId: user.endUserId,
      leaseKey: leaseKey(),
      calls: [],
      bookings: [],
      targetUsd: '0.50000000',
      keep: true,
      ttlSeconds: 120,
      logs: [kept, refused, foreign],
    };
    const first = await flushLease(database.db, flush);
    expect(first.leaseUsd).toBe('0.50000000');
    // The answer was lost: the same flush again writes nothing twice.
    await flushLease(database.db, flush);
    const written = await sql<{ id: string }>(testEnv, 'select id from gateway_call_log where id = any($1)', [
      [kept.id, refused.id, foreign.id],
    ]);
    expect(written).toEqual([{ id: kept.id }]);
  });
});

describe('settleLease: the flush', () => {
  it('books each call of a flush once, closes its record, and a replay books nothing and reduces nothing', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '2.00000000');
    const key = leaseKey();
    await settleLease(database.db, flush(user, key, [], '1.00000000'));
    const calls = leasedCalls(user, 12);
    const retail = retailOf(calls);

    const first = await settleLease(database.db, flush(user, key, calls, '1.00000000'));
    expect(outcomes(first.results)).toEqual(Array(12).fill('booked'));
    expect(first.results.map((result) => result.requestId)).toEqual(calls.map((call) => call.record.moneyKey));
    for (const [index, result] of first.results.entries()) {
      if (result.outcome === 'refused') throw new Error(result.message);
      expect(formatUsd(result.retailUsd)).toBe(formatUsd(calls[index]!.booking.rated.retailUsd));
    }
    const balance = subtractUsd(usd('2.00000000'), retail);
    expect(formatUsd(first.balanceUsd)).toBe(formatUsd(balance));
    expect(await balanceOf(testEnv, user.walletId)).toBe(formatUsd(balance));
    // keep: greatest(1.00 − retail, least(1.00, balance)) = 1.00 (the wallet still has it).
    expect(formatUsd(first.lease.amount)).toBe('1.00000000');
    const counts = await countsOf(calls);
    expect(counts).toEqual({ records: 12, settled: 12, events: 12, transactions: 12, entries: 48 });
    // The records are the object's: route, bounds and the time it authorized them.
    const [record] = await sql<{ route_mode: string; client_request_id: string; created_at: Date; bound_output_tokens: number }>(
      testEnv,
      'select route_mode, client_request_id, created_at, bound_output_tokens from gateway_calls where id = $1',
      [calls[3]!.record.id],
    );
    expect(record).toMatchObject({ route_mode: 'platform', client_request_id: calls[3]!.record.clientRequestId, bound_output_tokens: 200 });
    expect(new Date(record!.created_at).getTime()).toBe(calls[3]!.record.createdAt.getTime());
    await expectBooksClean(calls);

    // The answer was lost; the object flushes the same calls again.
    const replay = await settleLease(database.db, flush(user, key, calls, '1.00000000'));
    expect(outcomes(replay.results)).toEqual(Array(12).fill('already_booked'));
    expect(replay.results.map((result) => result.outcome !== 'refused' && result.usageEventId)).toEqual(
      first.results.map((result) => result.outcome !== 'refused' && result.usageEventId),
    );
    expect(formatUsd(replay.lease.amount)).toBe('1.00000000');
    expect(formatUsd(replay.balanceUsd)).toBe(formatUsd(balance));
    expect(await countsOf(calls)).toEqual(counts);
  });

  it('books against the money the lease reserved: a lease of the whole balance covers its calls, no receivable', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '0.10000000');
    const key = leaseKey();
    const granted = await settleLease(database.db, flush(user, key, [], '0.10000000'));
    expect([formatUsd(granted.lease.amount), formatUsd(granted.availableUsd)]).toEqual(['0.10000000', '0.00000000']);
    // Even bookings that allow no receivable: the lease's own money is not counted against them.
    const calls = leasedCalls(user, 3).map((call) => ({ ...call, booking: { ...call.booking, allowReceivable: false } }));
    const result = await settleLease(database.db, flush(user, key, calls, '0.10000000'));
    expect(outcomes(result.results)).toEqual(['booked', 'booked', 'booked']);
    for (const entry of result.results) if (entry.outcome !== 'refused') expect(formatUsd(entry.receivableUsd)).toBe('0.00000000');
    const balance = subtractUsd(usd('0.10000000'), retailOf(calls));
    expect(formatUsd(result.balanceUsd)).toBe(formatUsd(balance));
    // keep: old − booked = the whole balance left, still all leased.
    expect([formatUsd(result.lease.amount), formatUsd(result.availableUsd)]).toEqual([formatUsd(balance), '0.00000000']);
    await expectBooksClean(calls);
  });

  it('a replay with a smaller target does not reduce the lease by the retail again', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const key = leaseKey();
    await settleLease(database.db, flush(user, key, [], '0.50000000'));
    const calls = leasedCalls(user, 4);
    const first = await settleLease(database.db, flush(user, key, calls, '0.00000000'));
    const afterFirst = subtractUsd(usd('0.50000000'), retailOf(calls));
    expect(formatUsd(first.lease.amount)).toBe(formatUsd(afterFirst));
    const replay = await settleLease(database.db, flush(user, key, calls, '0.00000000'));
    expect(outcomes(replay.results)).toEqual(Array(4).fill('already_booked'));
    expect(formatUsd(replay.lease.amount)).toBe(formatUsd(afterFirst));
    await expectBooksClean(calls);
  });

  it('books a leased call whose client request id another call claimed, under a deterministic variant', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const key = leaseKey();
    await settleLease(database.db, flush(user, key, [], '0.50000000'));
    // A per-call call in flight holds the claim on 'dup', and two leased calls of one flush share 'twin'.
    const claimId = crypto.randomUUID();
    await sql(
      testEnv,
      `insert into gateway_calls (id, money_key, client_request_id, fingerprint, app_id, end_user_id, feature_key, route_mode,
                                  provider, model, bound_input_tokens, bound_output_tokens, status, deadline_at)
       values ($1, $2, 'dup', 'f', $3, $4, 'chat', 'platform', 'mock', 'echo', 10, 10, 'in_flight', now() + interval '1 hour')`,
      [claimId, `call:${claimId}`, user.appId, user.endUserId],
    );
    const calls = [leasedCall(user, 0, 'dup'), leasedCall(user, 1, 'twin'), leasedCall(user, 2, 'twin')];
    const result = await settleLease(database.db, flush(user, key, calls, '0.50000000'));
    expect(outcomes(result.results)).toEqual(['booked', 'booked', 'booked']);
    const rows = await sql<{ id: string; client_request_id: string; status: string }>(
      testEnv,
      'select id, client_request_id, status from gateway_calls where id = any($1)',
      [calls.map((call) => call.record.id)],
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get(calls[0]!.record.id)).toMatchObject({ client_request_id: `dup#${calls[0]!.record.id}`, status: 'settled' });
    expect(byId.get(calls[1]!.record.id)).toMatchObject({ client_request_id: 'twin', status: 'settled' });
    expect(byId.get(calls[2]!.record.id)).toMatchObject({ client_request_id: `twin#${calls[2]!.record.id}`, status: 'settled' });
    // A replay finds the records by id: nothing written, nothing booked again.
    const replay = await settleLease(database.db, flush(user, key, calls, '0.50000000'));
    expect(outcomes(replay.results)).toEqual(['already_booked', 'already_booked', 'already_booked']);
    expect(await countsOf(calls)).toMatchObject({ records: 3, events: 3 });
    await expectBooksClean(calls);
  });

  it('a flush that fails half-way writes nothing and leaves the lease; a refused element alone; the retry books each once', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const key = leaseKey();
    await settleLease(database.db, flush(user, key, [], '0.50000000'));
    const before = await leaseRow(key);
    const calls = leasedCalls(user, 6);
    const middle = [...calls.map((call) => call.record.moneyKey)].sort()[3]!;
    const inject = (errcode: string) =>
      sql(
        testEnv,
        `create or replace function fail_one_lease_booking() returns trigger language plpgsql as $$
         begin if new.request_id = '${middle}' then raise exception 'injected fault' using errcode = '${errcode}'; end if; return new; end $$;
         create or replace trigger fail_one_lease_booking before insert on usage_events for each row execute function fail_one_lease_booking()`,
      );
    const removeFault = () => sql(testEnv, 'drop trigger fail_one_lease_booking on usage_events; drop function fail_one_lease_booking()');

    await inject('XX000');
    try {
      await expect(settleLease(database.db, flush(user, key, calls, '0.50000000'))).rejects.toThrow();
    } finally {
      await removeFault();
    }
    expect(await countsOf(calls)).toEqual({ records: 0, settled: 0, events: 0, transactions: 0, entries: 0 });
    expect(await balanceOf(testEnv, user.walletId)).toBe('1.00000000');
    expect(await leaseRow(key)).toEqual(before);

    // A constraint refusing one element (class 23): that element refused, the others booked, its record left in flight.
    await inject('23514');
    let partial: Awaited<ReturnType<typeof settleLease>>;
    try {
      partial = await settleLease(database.db, flush(user, key, calls, '0.50000000'));
    } finally {
      await removeFault();
    }
    expect(partial.results.filter((result) => result.outcome === 'booked')).toHaveLength(5);
    expect(partial.results.find((result) => result.requestId === middle)).toMatchObject({ outcome: 'refused', reason: 'invalid_request' });
    // The wallet still covers the target.
    expect(formatUsd(partial.lease.amount)).toBe('0.50000000');
    expect(await countsOf(calls)).toEqual({ records: 6, settled: 5, events: 5, transactions: 5, entries: 20 });

    const retry = await settleLease(database.db, flush(user, key, calls, '0.50000000'));
    expect(retry.results.filter((result) => result.outcome === 'already_booked')).toHaveLength(5);
    expect(retry.results.find((result) => result.requestId === middle)?.outcome).toBe('booked');
    expect(await countsOf(calls)).toEqual({ records: 6, settled: 6, events: 6, transactions: 6, entries: 24 });
    expect(await balanceOf(testEnv, user.walletId)).toBe(formatUsd(subtractUsd(usd('1.00000000'), retailOf(calls))));
    await expectBooksClean(calls);
  });

  it('closes a record only with its booking: one whose booking is refused, or sent without one, stays in flight until a later flush', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '0.00000001');
    const key = leaseKey();
    await settleLease(database.db, flush(user, key, [], '0.00000000'));
    const calls = leasedCalls(user, 3);
    const [booked, uncovered, unsent] = calls as [LeasedCall, LeasedCall, LeasedCall];
    const records = async () =>
      sql<{ id: string; status: string; closed: boolean; closed_with_booking: boolean }>(
        testEnv,
        `select g.id, g.status, g.closed_at is not null as closed, coalesce(g.closed_at = e.created_at, false) as closed_with_booking
           from gateway_calls g left join usage_events e on e.call_id = g.id
          where g.id = any($1::uuid[]) order by array_position($1::uuid[], g.id)`,
        [calls.map((call) => call.record.id)],
      );

    // Three records; the second's booking allows no receivable and the wallet cannot cover it; the third's is not sent.
    const first = await settleLease(database.db, {
      ...flush(user, key, calls, '0.00000000'),
      bookings: [booked.booking, { ...uncovered.booking, allowReceivable: false }],
    });
    expect(first.results.map((result) => (result.outcome === 'refused' ? result.reason : result.outcome))).toEqual([
      'booked',
      'insufficient_balance',
    ]);
    expect(await records()).toEqual([
      { id: booked.record.id, status: 'settled', closed: true, closed_with_booking: true },
      { id: uncovered.record.id, status: 'in_flight', closed: false, closed_with_booking: false },
      { id: unsent.record.id, status: 'in_flight', closed: false, closed_with_booking: false },
    ]);

    // Funded, the object flushes the two again: booked now, and their records closed by these bookings.
    await fund(database, user.walletId, '1.00000000');
    const second = await settleLease(database.db, flush(user, key, [uncovered, unsent], '0.00000000'));
    expect(outcomes(second.results)).toEqual(['booked', 'booked']);
    expect((await records()).map((record) => [record.status, record.closed_with_booking])).toEqual(Array(3).fill(['settled', true]));
    expect(await countsOf(calls)).toEqual({ records: 3, settled: 3, events: 3, transactions: 3, entries: 12 });
    await expectBooksClean(calls);
  });

  it('serializes with concurrent holds and settles of the same wallet: available never below zero, each call booked once', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const key = leaseKey();
    const calls = leasedCalls(user, 8);
    const holds = Array.from({ length: 12 }, () =>
      reserveHold(database.db, { endUserId: user.endUserId, requestId: `call:${crypto.randomUUID()}`, amount: usd('0.07000000') }),
    );
    const settles = [0, 1, 2, 3].map((round) =>
      settleLease(database.db, flush(user, key, round % 2 === 0 ? calls : calls.slice(0, 4), '0.60000000')),
    );
    const [holdResults, settleResults] = await Promise.all([Promise.all(holds), Promise.all(settles)]);
    for (const result of settleResults) expect(formatUsd(result.availableUsd).startsWith('-')).toBe(false);
    for (const result of holdResults)
      if (result.outcome !== 'insufficient_balance') expect(formatUsd(result.availableUsd).startsWith('-')).toBe(false);
    expect((await availableOf(user)).startsWith('-')).toBe(false);
    for (const [index, call] of calls.entries()) {
      const seen = settleResults.flatMap((result) => result.results.filter((entry) => entry.requestId === call.record.moneyKey));
      expect(
        seen.filter((entry) => entry.outcome === 'booked'),
        `call ${index}`,
      ).toHaveLength(1);
    }
    expect(await countsOf(calls)).toMatchObject({ records: 8, events: 8 });
    expect(await balanceOf(testEnv, user.walletId)).toBe(formatUsd(subtractUsd(usd('1.00000000'), retailOf(calls))));
    await expectBooksClean(calls);
  });
});

describe('settleLease: what it refuses', () => {
  it('writes no record and books nothing of another end user, another app, another route, or a smuggled field', async () => {
    const alice = await createTestUser(testEnv);
    const bob = await createTestUser(testEnv);
    await fund(database, alice.walletId, '1.00000000');
    await fund(database, bob.walletId, '1.00000000');
    const key = leaseKey();
    await settleLease(database.db, flush(alice, key, [], '0.50000000'));
    const good = leasedCall(alice, 0);
    // Bob's call and booking in Alice's flush.
    const bobs = leasedCall(bob, 1);
    // Alice's booking with a record of Bob's end user.
    const foreignRecord = leasedCall(alice, 2);
    foreignRecord.record = { ...foreignRecord.record, endUserId: bob.endUserId };
    const byok = leasedCall(alice, 3);
    byok.record = { ...byok.record, routeMode: 'byok' as 'platform' };
    const otherApp = leasedCall(alice, 4);
    const unique = crypto.randomUUID();
    const [app] = await sql<{ id: string }>(
      testEnv,
      `with d as (insert into developers (name, email) values ('Other', $1) returning id)
       insert into apps (developer_id, public_app_id, name) select id, $2, 'Other app' from d returning id`,
      [`other-${unique}@example.com`, `app_other_${unique.replace(/-/g, '')}`],
    );
    otherApp.record = { ...otherApp.record, appId: app!.id };
    const smuggled = leasedCall(alice, 5);
    const underLease = leasedCall(alice, 6);
    underLease.booking = { ...underLease.booking, requestId: key, callId: undefined };
    const calls = [good, bobs, foreignRecord, byok, otherApp, smuggled, underLease];
    const rows = await sql<{
      ordinal: number;
      outcome: string;
      reason: string | null;
      message: string | null;
      lease_status: string | null;
    }>(
      testEnv,
      `select r.ordinal, r.outcome, r.reason, r.message, (s.lease).status as lease_status
         from faucet_settle_lease($1, $2, $3::jsonb, $4::jsonb, 0.5, true, 120) s,
              jsonb_to_recordset(s.results) as r(ordinal integer, outcome text, reason text, message text)
        order by r.ordinal`,
      [
        alice.endUserId,
        key,
        JSON.stringify(
          calls.map((call, index) => ({
            id: call.record.id,
            money_key: call.record.moneyKey,
            client_request_id: call.record.clientRequestId,
            fingerprint: 'f',
            app_id: call.record.appId,
            end_user_id: call.record.endUserId,
            feature_key: 'chat',
            route_mode: call.record.routeMode,
            provider: 'mock',
            model: 'echo',
            bound_input_tokens: 10,
            bound_output_tokens: 10,
            deadline_at: new Date(Date.now() + 3_600_000).toISOString(),
            created_at: new Date().toISOString(),
            developer_share_bps: 5000,
            ...(index === 5 ? { status: 'settled' } : {}),
          })),
        ),
        JSON.stringify(calls.map((call) => bookingElement(call.booking))),
      ],
    );
    expect(rows.map((row) => [row.ordinal, row.outcome, row.reason])).toEqual([
      [1, 'booked', null],
      [2, 'refused', 'invalid_request'],
      [3, 'refused', 'invalid_request'],
      [4, 'refused', 'invalid_request'],
      [5, 'refused', 'invalid_request'],
      [6, 'refused', 'invalid_request'],
      [7, 'refused', 'invalid_request'],
    ]);
    expect(rows.slice(1).map((row) => row.message)).toEqual([
      "the booking is not of this wallet's end user",
      "the call record is not of this wallet's end user",
      "the call record is not a platform call, a byok call with a key of this end user or a developer_key call with a key of the app's developer (only those are leased)",
      "the call record is not of the end user's app",
      'the call record has an unknown field status',
      'a booking cannot use a lease key',
    ]);
    expect(rows[0]!.lease_status).toBe('active');
    expect(await countsOf(calls.slice(1, 6))).toEqual({ records: 0, settled: 0, events: 0, transactions: 0, entries: 0 });
    // The record of the call whose booking named the lease key is valid: written, left in flight (the sweeper's, as any unbooked call).
    expect(await countsOf([underLease])).toEqual({ records: 1, settled: 0, events: 0, transactions: 0, entries: 0 });
    expect(await balanceOf(testEnv, bob.walletId)).toBe('1.00000000');
    // The lease itself was not settled by the booking that named its key, nor by a batch or per-call booking naming it.
    expect((await leaseRow(key))?.status).toBe('active');
    const [batched] = await bookUsageBatch(database.db, [underLease.booking]);
    expect(batched).toMatchObject({ outcome: 'refused', reason: 'invalid_request', message: 'a booking cannot use a lease key' });
    await expect(bookUsage(database.db, underLease.booking)).rejects.toMatchObject({ code: 'invalid_request' });
    expect((await leaseRow(key))?.status).toBe('active');
    await expectBooksClean([good]);
  });

  it('a call record of the wrong type or missing a field is not written and its booking refused; the others booked', async () => {
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const [good, badType, missing] = leasedCalls(user, 3);
    const encoded = (call: LeasedCall) => ({
      id: call.record.id,
      money_key: call.record.moneyKey,
      client_request_id: call.record.clientRequestId,
      fingerprint: 'f',
      app_id: user.appId,
      end_user_id: user.endUserId,
      feature_key: 'chat',
      route_mode: 'platform',
      provider: 'mock',
      model: 'echo',
      bound_input_tokens: call.booking.rated.inputTokens,
      bound_output_tokens: call.booking.rated.outputTokens,
      deadline_at: new Date(Date.now() + 3_600_000).toISOString(),
      created_at: new Date().toISOString(),
      developer_share_bps: 5000,
    });
    const { fingerprint: _, ...withoutFingerprint } = encoded(missing!);
    const rows = await sql<{ ordinal: number; outcome: string; message: string | null }>(
      testEnv,
      `select r.ordinal, r.outcome, r.message
         from faucet_settle_lease($1, $2, $3::jsonb, $4::jsonb, 0.1, true, 120) s,
              jsonb_to_recordset(s.results) as r(ordinal integer, outcome text, message text)
        order by r.ordinal`,
      [
        user.endUserId,
        leaseKey(),
        JSON.stringify([encoded(good!), { ...encoded(badType!), bound_input_tokens: 'many' }, withoutFingerprint]),
        JSON.stringify([good!, badType!, missing!].map((call) => bookingElement(call.booking))),
      ],
    );
    expect(rows).toEqual([
      { ordinal: 1, outcome: 'booked', message: null },
      { ordinal: 2, outcome: 'refused', message: 'the call record has a bound_input_tokens that is not a valid integer' },
      { ordinal: 3, outcome: 'refused', message: 'the call record misses the field fingerprint' },
    ]);
    expect(await countsOf([badType!, missing!])).toEqual({ records: 0, settled: 0, events: 0, transactions: 0, entries: 0 });
    await expectBooksClean([good!]);
  });

  it('refuses a malformed flush as a whole, writing nothing', async () => {
    const alice = await createTestUser(testEnv);
    const bob = await createTestUser(testEnv);
    await fund(database, alice.walletId, '1.00000000');
    const bobKey = leaseKey();
    await settleLease(database.db, flush(bob, bobKey, [], '0.00000000'));
    const call = leasedCall(alice, 0);
    const attempt = (overrides: Partial<SettleLeaseInput>) =>
      settleLease(database.db, { ...flush(alice, leaseKey(), [call], '0.10000000'), ...overrides });
    // Another wallet's lease key.
    await expect(attempt({ leaseKey: bobKey })).rejects.toMatchObject({ code: 'invalid_request' });
    // Not a lease key (a call's money key): refused before and by the function.
    await expect(attempt({ leaseKey: call.record.moneyKey })).rejects.toThrow(RangeError);
    const raw = (text: string, params: unknown[]) => sql(testEnv, text, params).catch((caught: unknown) => caught);
    expect(await raw(`select * from faucet_settle_lease($1, 'call:x', '[]', '[]', 0, true, 60)`, [alice.endUserId])).toMatchObject({
      code: '22023',
    });
    expect(await raw(`select * from faucet_settle_lease($1, 'lease:x', '[]', '[]', -1, true, 60)`, [alice.endUserId])).toMatchObject({
      code: '22023',
    });
    expect(
      await raw(`select * from faucet_settle_lease($1, 'lease:x', '[]', '[]', 0.000000001, true, 60)`, [alice.endUserId]),
    ).toMatchObject({
      code: '22023',
    });
    expect(await raw(`select * from faucet_settle_lease($1, 'lease:x', '[]', '[]', 1, true, 0)`, [alice.endUserId])).toMatchObject({
      code: '22023',
    });
    expect(await raw(`select * from faucet_settle_lease($1, 'lease:x', '{}', '[]', 1, true, 60)`, [alice.endUserId])).toMatchObject({
      code: '22023',
    });
    expect(
      await raw(`select * from faucet_settle_lease($1, 'lease:x', '[{"id": "nope"}]', '[]', 1, true, 60)`, [alice.endUserId]),
    ).toMatchObject({
      code: '22023',
    });
    expect(await raw(`select * from faucet_settle_lease($1, 'lease:x', '[]', '[]', 1, true, 60)`, [crypto.randomUUID()])).toMatchObject({
      code: 'P0002',
    });
    await expect(
      settleLease(database.db, { ...flush(alice, leaseKey(), [], '0.00000000'), bookings: Array(1001).fill(call.booking) }),
    ).rejects.toThrow(RangeError);
    expect(await countsOf([call])).toEqual({ records: 0, settled: 0, events: 0, transactions: 0, entries: 0 });
    const [leases] = await sql<{ count: number }>(
      testEnv,
      `select count(*)::int as count from balance_holds h join wallets w on w.id = h.wallet_id where w.id = $1`,
      [alice.walletId],
    );
    expect(leases!.count).toBe(0);
    expect(await balanceOf(testEnv, alice.walletId)).toBe('1.00000000');
  });
});
