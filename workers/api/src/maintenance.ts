/**
 * Housekeeping on a cron trigger (wrangler.toml `[triggers]`): marks expired holds and folds the hot
 * accounts' appended credits into their balance rows. Balances are exact without it; it keeps the
 * holds and deltas tables short.
 */
import { createDatabase } from '../../shared/db.ts';
import type { Env } from '../../shared/env.ts';
import { expireHolds } from '../../shared/ledger/holds.ts';
import { rollUpBalances } from '../../shared/ledger/roll-up.ts';
import { createLogger } from '../../shared/logger.ts';

export interface MaintenanceResult {
  expiredHolds: number;
  rolledUpWallets: number;
}

export async function runMaintenance(env: Env): Promise<MaintenanceResult> {
  const { db, pool } = createDatabase(env);
  try {
    const result = { expiredHolds: await expireHolds(db), rolledUpWallets: await rollUpBalances(db) };
    createLogger({ service: 'api' }, env.LOG_LEVEL).info('maintenance', {
      expired_holds: result.expiredHolds,
      rolled_up_wallets: result.rolledUpWallets,
    });
    return result;
  } finally {
    await pool.end();
  }
}
