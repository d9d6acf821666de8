/** Housekeeping of the hot accounts: fold their appended credits into their balance rows. */
import { sql } from 'drizzle-orm';
import { queryOne, type SqlDatabase } from '../query.ts';

/**
 * Rolls up every wallet with pending credits, in the global lock order. Balances read through the
 * ledger are exact without it; it keeps `wallet_balance_deltas` short. Returns the wallets rolled up.
 */
export async function rollUpBalances(db: SqlDatabase): Promise<number> {
  const row = await queryOne<{ wallets: number }>(db, sql`select faucet_roll_up_balances() as wallets`);
  return row.wallets;
}
