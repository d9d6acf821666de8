/**
 * Reconciliation: the wallet balances are a cache of the entries. Recompute every wallet from its
 * entries and every transaction's sum, and report each disagreement. A wallet's balance is its row's
 * balance plus its pending credits (docs/money.md, hot accounts).
 *
 * A wallet may be below zero only as a receivable (chargebacks, refunds, clawbacks of money already
 * spent, migrations/0007; usage booked past its hold, 0006): such a wallet is listed under
 * `receivables`, and is a violation only when it owes more than its recorded receivables add up to
 * (something else took it below zero).
 *
 * Clawbacks of developer revenue never exceed what the developer earned from that end user
 * (faucet_book_clawback caps them): an end user whose clawbacks still booked add up to more is listed
 * under `excess_clawbacks` with the clawbacks to reverse (`POST /v1/admin/clawbacks/{id}/reverse`),
 * and makes `ok` false.
 *
 * It also reports the wallet objects' active leases (holds keyed `lease:…`, set by
 * `faucet_settle_lease`): money reserved for calls authorized at the edge and not booked yet. A lease
 * is a hold, not an entry, so it never makes the books disagree and does not change `ok`.
 */
import { sql } from 'drizzle-orm';
import { addUsd, compareUsd, formatUsd, negateUsd, parseDatabaseAmount, subtractUsd } from '../money/index.ts';
import { queryOne, queryRows, type SqlDatabase } from '../query.ts';

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

export interface Receivable {
  wallet_id: string;
  kind: string;
  /** What the owner owes now: minus the wallet's balance. */
  outstanding_usd: string;
  /** Σ of the parts booked below zero on this wallet, ever. */
  recorded_usd: string;
}

export interface ExcessClawback {
  user_wallet_id: string;
  developer_id: string;
  /** Σ developer revenue booked from this end user's usage. */
  earned_usd: string;
  /** Σ clawbacks of that revenue still booked (not reversed). */
  clawed_back_usd: string;
  excess_usd: string;
  /** The clawbacks still booked, newest first: reversing them mends the excess. */
  clawback_ids: string[];
}

export interface LedgerReconciliation {
  ok: boolean;
  checked_at: string;
  counts: { wallets: number; transactions: number; entries: number };
  wallet_mismatches: WalletMismatch[];
  unbalanced_transactions: UnbalancedTransaction[];
  negative_wallets: NegativeWallet[];
  receivables: Receivable[];
  receivables_total_usd: string;
  excess_clawbacks: ExcessClawback[];
  /** Active, unexpired leases of wallet objects and the USD they hold. */
  leases: { active: number; leased_usd: string };
}

export async function reconcileLedger(db: SqlDatabase): Promise<LedgerReconciliation> {
  const counts = await queryOne<{
    wallets: number;
    transactions: number;
    entries: number;
    checked_at: Date | string;
    leases: number;
    leased: string;
  }>(
    db,
    sql`select (select count(*) from wallets)::integer as wallets,
               (select count(*) from ledger_transactions)::integer as transactions,
               (select count(*) from ledger_entries)::integer as entries,
               now() as checked_at,
               l.leases, l.leased
          from (select count(*)::integer as leases, coalesce(sum(h.amount), 0)::numeric(20, 8) as leased
                  from balance_holds h
                 where h.request_id like 'lease:%' and h.status = 'active' and h.expires_at > now()) l`,
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
  const belowZero = await queryRows<{ id: string; kind: string; balance: string; recorded: string }>(
    db,
    sql`select w.id, w.kind, faucet_wallet_balance(w.id) as balance,
               ((select coalesce(sum(r.amount), 0) from receivables r where r.wallet_id = w.id)
                -- Usage booked past its hold (0006) records its shortfall on the usage row.
                + (select coalesce(sum(u.receivable_usd), 0) from usage_events u
                   where w.end_user_id is not null and u.end_user_id = w.end_user_id))::numeric(20, 8) as recorded
        from wallets w
        where not w.allow_negative and (w.balance < 0 or faucet_wallet_balance(w.id) < 0) order by w.id`,
  );
  const excessRows = await queryRows<{ user_wallet_id: string; developer_id: string; earned: string; clawed: string; ids: string[] }>(
    db,
    sql`select c.user_wallet_id, c.developer_id, c.clawed, c.ids,
               (select coalesce(sum(u.developer_revenue_usd), 0) from usage_events u join wallets w on w.end_user_id = u.end_user_id
                where w.id = c.user_wallet_id)::numeric(20, 8) as earned
        from (select user_wallet_id, min(developer_id::text)::uuid as developer_id, sum(amount)::numeric(20, 8) as clawed,
                     array_agg(id::text order by created_at desc) as ids
              from revenue_clawbacks where status = 'booked' group by user_wallet_id) c
        where c.clawed > (select coalesce(sum(u.developer_revenue_usd), 0) from usage_events u join wallets w on w.end_user_id = u.end_user_id
                          where w.id = c.user_wallet_id)
        order by c.user_wallet_id`,
  );
  const excess_clawbacks = excessRows.map((row) => ({
    user_wallet_id: row.user_wallet_id,
    developer_id: row.developer_id,
    earned_usd: formatUsd(parseDatabaseAmount(row.earned)),
    clawed_back_usd: formatUsd(parseDatabaseAmount(row.clawed)),
    excess_usd: formatUsd(subtractUsd(parseDatabaseAmount(row.clawed), parseDatabaseAmount(row.earned))),
    clawback_ids: row.ids,
  }));
  const owed = (row: (typeof belowZero)[number]) => negateUsd(parseDatabaseAmount(row.balance));
  const isReceivable = (row: (typeof belowZero)[number]) => compareUsd(owed(row), parseDatabaseAmount(row.recorded)) <= 0;
  const negativeRows = belowZero.filter((row) => !isReceivable(row));
  const receivables = belowZero.filter(isReceivable).map((row) => ({
    wallet_id: row.id,
    kind: row.kind,
    outstanding_usd: formatUsd(owed(row)),
    recorded_usd: formatUsd(parseDatabaseAmount(row.recorded)),
  }));
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
    ok:
      wallet_mismatches.length === 0 &&
      unbalanced_transactions.length === 0 &&
      negative_wallets.length === 0 &&
      excess_clawbacks.length === 0,
    checked_at: new Date(counts.checked_at).toISOString(),
    counts: { wallets: counts.wallets, transactions: counts.transactions, entries: counts.entries },
    wallet_mismatches,
    unbalanced_transactions,
    negative_wallets,
    receivables,
    receivables_total_usd: formatUsd(addUsd(...receivables.map((row) => parseDatabaseAmount(row.outstanding_usd)))),
    excess_clawbacks,
    leases: { active: counts.leases, leased_usd: formatUsd(parseDatabaseAmount(counts.leased)) },
  };
}
