/**
 * Read a wallet's balance (including credits appended to it and not yet rolled up), its active
 * holds and what is available to spend.
 */
import { sql } from 'drizzle-orm';
import { parseDatabaseAmount, type Usd } from '../money/index.ts';
import { queryRows, requireUuid, type SqlDatabase } from '../query.ts';

export interface WalletBalance {
  walletId: string;
  /** `user`, `developer`, or a system account. */
  kind: string;
  currency: 'USD';
  balanceUsd: Usd;
  heldUsd: Usd;
  availableUsd: Usd;
}

interface Row {
  id: string;
  kind: string;
  balance: string;
  held: string;
  available: string;
}

function toBalance(row: Row): WalletBalance {
  return {
    walletId: row.id,
    kind: row.kind,
    currency: 'USD',
    balanceUsd: parseDatabaseAmount(row.balance),
    heldUsd: parseDatabaseAmount(row.held),
    availableUsd: parseDatabaseAmount(row.available),
  };
}

export async function getWalletBalance(db: SqlDatabase, walletId: string): Promise<WalletBalance | null> {
  const [row] = await queryRows<Row>(
    db,
    sql`select id, kind, faucet_wallet_balance(id) as balance, faucet_held(id, null) as held,
               greatest(faucet_wallet_balance(id) - faucet_held(id, null), 0)::numeric(20, 8) as available
        from wallets where id = ${requireUuid(walletId, 'wallet')}::uuid`,
  );
  return row ? toBalance(row) : null;
}
