import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { startPostgres, ensureDatabase, withClient } from '/work/main/scripts/lib/postgres.ts';
import { migrate } from '/work/main/scripts/lib/migrate.ts';
import { seed } from '/work/main/scripts/lib/seed.ts';
import * as ledger from '/work/main/workers/shared/ledger/index.ts';
import { rateUsage } from '/work/main/workers/shared/rating/index.ts';
import { formatUsd, parseWireAmount } from '/work/main/workers/shared/money/index.ts';

const server = await startPostgres({ dataDir: '/tmp/ledgerdev/pgdata/data', port: 55432 });
try {
  await ensureDatabase(server.url('postgres'), 'trydb');
  const seeded = await withClient(server.url('trydb'), async (client) => {
    await migrate(client);
    return seed(client, { developerKey: 'fdk_test', sessionHashSecret: 'secret' });
  });
  const pool = new pg.Pool({ connectionString: server.url('trydb'), max: 20 });
  pool.on('error', () => {});
  const db = drizzle(pool);
  console.log(await ledger.getUserWalletBalance(db, seeded.endUserId).then((b) => formatUsd(b.balanceUsd)));
  const rid = 'r' + Date.now();
  console.log(await ledger.reserveHold(db, { endUserId: seeded.endUserId, requestId: rid, amount: parseWireAmount('1.00000000') }));
  const w = await ledger.getUserWalletBalance(db, seeded.endUserId);
  console.log(formatUsd(w.balanceUsd), formatUsd(w.heldUsd), formatUsd(w.availableUsd));
  const rated = rateUsage({ routeMode: 'platform', provider: 'mock', model: 'echo', inputTokens: 1000, outputTokens: 500, estimated: false });
  const booked = await ledger.bookUsage(db, { requestId: rid, appId: seeded.appId, endUserId: seeded.endUserId, featureKey: 'chat', rated });
  console.log(booked.outcome, 'retailUsd' in booked && formatUsd(booked.retailUsd), formatUsd(booked.balanceUsd));
  const dup = await ledger.bookUsage(db, { requestId: rid, appId: seeded.appId, endUserId: seeded.endUserId, featureKey: 'chat', rated });
  console.log(dup.outcome);
  const w2 = await ledger.getUserWalletBalance(db, seeded.endUserId);
  console.log(formatUsd(w2.balanceUsd), formatUsd(w2.heldUsd), formatUsd(w2.availableUsd));
  const adj = await ledger.adjustWallet(db, { walletId: seeded.userWalletId, kind: 'refund', direction: 'credit', amount: parseWireAmount('0.50000000'), reason: 'x', idempotencyKey: 'k1', requestId: 'req1' });
  console.log(adj);
  console.log((await ledger.adjustWallet(db, { walletId: seeded.userWalletId, kind: 'refund', direction: 'credit', amount: parseWireAmount('0.50000000'), reason: 'x', idempotencyKey: 'k1', requestId: 'req2' })).replayed);
  try { await ledger.adjustWallet(db, { walletId: seeded.userWalletId, kind: 'refund', direction: 'credit', amount: parseWireAmount('0.60000000'), reason: 'x', idempotencyKey: 'k1', requestId: 'req2' }); } catch (e) { console.log('conflict?', (e as Error).message); }
  try { await ledger.adjustWallet(db, { walletId: seeded.userWalletId, kind: 'adjustment', direction: 'debit', amount: parseWireAmount('100.00000000'), reason: 'x', requestId: 'req3' }); } catch (e) { console.log('402?', (e as Error).message); }
  console.log(await ledger.creditTestBalance(db, { walletId: seeded.userWalletId, amount: parseWireAmount('5.00000000'), requestId: 'r9' }));
  console.log(JSON.stringify(await ledger.reconcileLedger(db)));
  // concurrency
  const t0 = Date.now();
  await Promise.all(Array.from({ length: 200 }, (_, i) => ledger.bookUsage(db, { requestId: `c${t0}-${i}`, appId: seeded.appId, endUserId: seeded.endUserId, featureKey: 'chat', rated })));
  console.log('200 concurrent bookings ms', Date.now() - t0);
  console.log(JSON.stringify(await ledger.reconcileLedger(db)));
  await pool.end();
} catch (e) { console.log('FAILED', e); } finally {
  await server.stop();
}
