/**
 * Fixtures of the ledger's Workers-runtime tests (imported by tests only): a database handle with
 * room for real concurrency, fresh end users of the demo app, funding, and a charge of an exact amount.
 */
import { Pool } from '@neondatabase/serverless';
import { drizzle } from 'drizzle-orm/neon-serverless';
import { expect } from 'vitest';
import { adminToken, api, call, demoFixture, sql, type TestEnv } from './harness.ts';
import { configureLocalProxy } from '#shared/db.ts';
import { parseWireAmount, type Usd } from '#shared/money/index.ts';
import { rateUsage, type RatedUsage } from '#shared/rating/index.ts';
import { creditTestBalance } from '#shared/ledger/credit-test-balance.ts';
import { bookUsage } from '#shared/ledger/book-usage.ts';

export interface LedgerTestDatabase {
  db: ReturnType<typeof drizzle>;
  close(): Promise<void>;
}

/** A pool of `connections` sockets, so that concurrent bookings really run concurrently in PostgreSQL. */
export function openLedgerDatabase(testEnv: TestEnv, connections = 20): LedgerTestDatabase {
  configureLocalProxy(testEnv.DATABASE_WS_PROXY!);
  const pool = new Pool({ connectionString: testEnv.DATABASE_URL, max: connections });
  pool.on('error', () => {});
  return { db: drizzle({ client: pool }), close: () => pool.end() };
}

export interface TestUser {
  endUserId: string;
  walletId: string;
  appId: string;
}

/** A new end user of the demo app with an empty wallet. */
export async function createTestUser(testEnv: TestEnv): Promise<TestUser> {
  const { app_id: appId } = await demoFixture(testEnv);
  const [row] = await sql<{ end_user_id: string; wallet_id: string }>(
    testEnv,
    `with u as (insert into end_users (app_id, external_user_hash) values ($1, $2) returning id)
     insert into wallets (kind, end_user_id) select 'user', id from u returning end_user_id, id as wallet_id`,
    [appId, crypto.randomUUID().replace(/-/g, '')],
  );
  return { endUserId: row!.end_user_id, walletId: row!.wallet_id, appId };
}

/** Credits a wallet (the one funding helper): through an open test database, or a connection of its own. */
export async function fund(target: LedgerTestDatabase | TestEnv, walletId: string, amount: string): Promise<void> {
  const credit = (db: LedgerTestDatabase['db']) =>
    creditTestBalance(db, { walletId, amount: parseWireAmount(amount), requestId: `fund-${crypto.randomUUID()}` });
  if ('close' in target && typeof target.close === 'function') {
    await credit((target as LedgerTestDatabase).db);
    return;
  }
  const database = openLedgerDatabase(target as TestEnv, 1);
  try {
    await credit(database.db);
  } finally {
    await database.close();
  }
}

/** A rated call whose retail is exactly `amount` (a byok call with an open fee, split with the platform). */
export function chargeOf(amount: string | Usd): RatedUsage {
  return rateUsage(
    { routeMode: 'byok', provider: 'openai', model: 'gpt-4o-mini', inputTokens: 10, outputTokens: 10, estimated: false },
    { openFeeUsd: typeof amount === 'string' ? parseWireAmount(amount) : amount },
  );
}

/** A platform-route call of the mock model: upstream payable, developer and platform shares all non-zero. */
export function platformCall(inputTokens: number, outputTokens: number): RatedUsage {
  return rateUsage({ routeMode: 'platform', provider: 'mock', model: 'echo', inputTokens, outputTokens, estimated: false });
}

/** Ledger invariants in one query: unbalanced transactions, balance mismatches, wallets below zero beyond their receivables. */
export async function ledgerViolations(testEnv: TestEnv): Promise<{ unbalanced: number; mismatched: number; negative: number }> {
  const [row] = await sql<{ unbalanced: number; mismatched: number; negative: number }>(
    testEnv,
    `select
       (select count(*) from (select transaction_id from ledger_entries group by transaction_id having sum(amount) <> 0) t)::int as unbalanced,
       (select count(*) from wallets w
         where faucet_wallet_balance(w.id) <> coalesce((select sum(amount) from ledger_entries e where e.wallet_id = w.id), 0))::int as mismatched,
       -- Below zero only by recorded receivables (chargebacks, clawbacks, usage past its hold), as reconciliation checks.
       (select count(*) from wallets w where not w.allow_negative and (w.balance < 0 or faucet_wallet_balance(w.id) < 0)
         and -faucet_wallet_balance(w.id) > (select coalesce(sum(r.amount), 0) from receivables r where r.wallet_id = w.id)
           + (select coalesce(sum(u.receivable_usd), 0) from usage_events u where w.end_user_id is not null and u.end_user_id = w.end_user_id)
       )::int as negative`,
  );
  return row!;
}

export async function balanceOf(testEnv: TestEnv, walletId: string): Promise<string> {
  const [row] = await sql<{ balance: string }>(testEnv, 'select faucet_wallet_balance($1)::text as balance', [walletId]);
  return row!.balance;
}

/**
 * What every operator-path test ends on, read through the admin API as an operator would: the ledger
 * reconciles (GET /v1/admin/reconciliation/ledger) and every paid gateway call that ended is billed
 * (GET /v1/admin/reconciliation/upstream).
 */
export async function expectReconciledAndAudited(testEnv: TestEnv): Promise<void> {
  const ledger = await call(api(), testEnv, '/v1/admin/reconciliation/ledger', { token: adminToken });
  const report = (await ledger.json()) as { ok: boolean };
  expect(report.ok, JSON.stringify(report)).toBe(true);
  const audit = await call(api(), testEnv, '/v1/admin/reconciliation/upstream', { token: adminToken });
  expect(await audit.json()).toMatchObject({ ok: true, unbilled_calls: 0 });
}

/** Usage of `endUserId` booked on the demo app's `chat` feature (revenue for the demo developer), as the gateway books a call. */
export async function spendWithDemoDeveloper(database: LedgerTestDatabase, testEnv: TestEnv, endUserId: string, rated: RatedUsage) {
  const { app_id: appId } = await demoFixture(testEnv);
  const booked = await bookUsage(database.db, { requestId: `spend-${crypto.randomUUID()}`, appId, endUserId, featureKey: 'chat', rated });
  expect(booked.outcome).toBe('booked');
}
