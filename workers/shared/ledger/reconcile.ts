/**
 * Reconciliation: the wallet balances are a cache of the entries. Recompute every wallet from its
 * entries and every transaction's sum, and report each disagreement. A wallet's balance is its row's
 * balance plus its pending credits (docs/money.md, hot accounts).
 */
import { sql } from 'drizzle-orm';
import { formatUsd, parseDatabaseAmount, subtractUsd } from '../money/index.ts';
import { queryOne, queryRows, type LedgerDatabase } from './database.ts';

export interface WalletMismatch {
  wallet_id: string;
  kind: string;
  balance_usd: string;
  entries_sum_usd: string;
  difference_usd: string;
}

export interface UnbalancedTransaction {
  transaction_id: string;
  kind: string;
  sum_usd: string;
}

export interface NegativeWallet {
  wallet_id: string;
  kind: string;
  balance_usd: string;
}

export interface LedgerReconciliation {
  ok: boolean;
  checked_at: string;
  counts: { wallets: number; transactions: number; entries: number };
  wallet_mismatches: WalletMismatch[];
  unbalanced_transactions: UnbalancedTransaction[];
  negative_wallets: NegativeWallet[];
}

export async function reconcileLedger(db: LedgerDatabase): Promise<LedgerReconciliation> {
  const counts = await queryOne<{ wallets: number; transactions: number; entries: number; checked_at: Date | string }>(
    db,
    sql`select (select count(*) from wallets)::integer as wallets,
               (select count(*) from ledger_transactions)::integer as transactions,
               (select count(*) from ledger_entries)::integer as entries,
               now() as checked_at`,
  );
  const walletRows = await queryRows<{ id: string; kind: string; balance: string; entries_sum: string }>(
    db,
    sql`select w.id, w.kind, (w.balance + coalesce(d.total, 0))::numeric(20, 8) as balance,
               coalesce(e.total, 0)::numeric(20, 8) as entries_sum
        from wallets w
        left join (select wallet_id, sum(amount) as total from ledger_entries group by wallet_id) e on e.wallet_id = w.id
        left join (select wallet_id, sum(amount) as total from wallet_balance_deltas group by wallet_id) d on d.wallet_id = w.id
        where w.balance + coalesce(d.total, 0) <> coalesce(e.total, 0)
        order by w.id`,
  );
  const transactionRows = await queryRows<{ id: string; kind: string; total: string }>(
    db,
    sql`select t.id, t.kind, coalesce(sum(e.amount), 0)::numeric(20, 8) as total
        from ledger_transactions t left join ledger_entries e on e.transaction_id = t.id
        group by t.id having coalesce(sum(e.amount), 0) <> 0
        order by t.id`,
  );
  const negativeRows = await queryRows<{ id: string; kind: string; balance: string }>(
    db,
    sql`select id, kind, faucet_wallet_balance(id) as balance from wallets
        where not allow_negative and (balance < 0 or faucet_wallet_balance(id) < 0) order by id`,
  );
  const wallet_mismatches = walletRows.map((row) => ({
    wallet_id: row.id,
    kind: row.kind,
    balance_usd: formatUsd(parseDatabaseAmount(row.balance)),
    entries_sum_usd: formatUsd(parseDatabaseAmount(row.entries_sum)),
    difference_usd: formatUsd(subtractUsd(parseDatabaseAmount(row.balance), parseDatabaseAmount(row.entries_sum))),
  }));
  const unbalanced_transactions = transactionRows.map((row) => ({
    transaction_id: row.id,
    kind: row.kind,
    sum_usd: formatUsd(parseDatabaseAmount(row.total)),
  }));
  const negative_wallets = negativeRows.map((row) => ({
    wallet_id: row.id,
    kind: row.kind,
    balance_usd: formatUsd(parseDatabaseAmount(row.balance)),
  }));
  return {
    ok: wallet_mismatches.length === 0 && unbalanced_transactions.length === 0 && negative_wallets.length === 0,
    checked_at: new Date(counts.checked_at).toISOString(),
    counts: { wallets: counts.wallets, transactions: counts.transactions, entries: counts.entries },
    wallet_mismatches,
    unbalanced_transactions,
    negative_wallets,
  };
}
