/** Read a wallet's balance, its active holds and what is available to spend. */
import { sql } from 'drizzle-orm';
import { parseDatabaseAmount, type Usd } from '../money/index.ts';
import { queryRows, requireUuid, type LedgerDatabase } from './database.ts';

export interface WalletBalance {
  walletId: string;
  currency: 'USD';
  balanceUsd: Usd;
  heldUsd: Usd;
  availableUsd: Usd;
}

interface Row {
  id: string;
  balance: string;
  held: string;
  available: string;
}

function toBalance(row: Row): WalletBalance {
  return {
    walletId: row.id,
    currency: 'USD',
    balanceUsd: parseDatabaseAmount(row.balance),
    heldUsd: parseDatabaseAmount(row.held),
    availableUsd: parseDatabaseAmount(row.available),
  };
}

/** The end user's wallet, created empty on first sight (a new user simply has nothing to spend). */
export async function getUserWalletBalance(db: LedgerDatabase, endUserId: string): Promise<WalletBalance> {
  const [row] = await queryRows<Row>(
    db,
    sql`with wallet as (select id, balance from wallets where id = faucet_user_wallet(${requireUuid(endUserId, 'end user')}::uuid))
        select id, balance::numeric(20, 8) as balance, faucet_held(id, null) as held,
               greatest(balance - faucet_held(id, null), 0)::numeric(20, 8) as available
        from wallet`,
  );
  if (!row) throw new Error('user wallet missing after creation');
  return toBalance(row);
}

export async function getWalletBalance(db: LedgerDatabase, walletId: string): Promise<WalletBalance | null> {
  const [row] = await queryRows<Row>(
    db,
    sql`select id, balance::numeric(20, 8) as balance, faucet_held(id, null) as held,
               greatest(balance - faucet_held(id, null), 0)::numeric(20, 8) as available
        from wallets where id = ${requireUuid(walletId, 'wallet')}::uuid`,
  );
  return row ? toBalance(row) : null;
}
