/**
 * A developer's wallet as the developer sees it (docs/developers.md, "Money"), read in one statement
 * so the figures agree with each other: the balance (the sum of the wallet's ledger entries: its
 * row's balance plus the usage credits appended and not yet rolled up), the pending part of it, what
 * open payouts reserve, and what a payout run could take now (balance − active holds, the same
 * figure `faucet_create_payouts` compares with its threshold; never below zero).
 */
import { sql } from 'drizzle-orm';
import { parseDatabaseAmount, type Usd } from '../money/index.ts';
import { queryRows, type SqlDatabase } from '../query.ts';

export interface DeveloperWallet {
  walletId: string;
  currency: 'USD';
  balanceUsd: Usd;
  pendingUsd: Usd;
  reservedUsd: Usd;
  availableUsd: Usd;
}

/** The figures of one statement; no table describes them. */
interface DeveloperWalletRow {
  id: string;
  balance: string;
  pending: string;
  reserved: string;
  available: string;
}

export async function getDeveloperWallet(db: SqlDatabase, developerId: string): Promise<DeveloperWallet | null> {
  const [row] = await queryRows<DeveloperWalletRow>(
    db,
    sql`select w.id, faucet_wallet_balance(w.id)::text as balance, faucet_pending(w.id)::text as pending,
               (select coalesce(sum(h.amount), 0)::numeric(20, 8) from payouts p
                  join balance_holds h on h.request_id = 'payout:' || p.id::text and h.status = 'active'
                 where p.wallet_id = w.id and p.status in ('pending', 'processing'))::text as reserved,
               greatest(faucet_wallet_balance(w.id) - faucet_held(w.id, null), 0)::numeric(20, 8)::text as available
          from wallets w where w.kind = 'developer' and w.developer_id = ${developerId}::uuid`,
  );
  if (!row) return null;
  return {
    walletId: row.id,
    currency: 'USD',
    balanceUsd: parseDatabaseAmount(row.balance),
    pendingUsd: parseDatabaseAmount(row.pending),
    reservedUsd: parseDatabaseAmount(row.reserved),
    availableUsd: parseDatabaseAmount(row.available),
  };
}
