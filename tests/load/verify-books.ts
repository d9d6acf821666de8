/**
 * After a load run: the books against what the client saw. Every call answered 200 was charged
 * exactly once, at the amount it was told; every call refused was charged nothing; no usage row
 * exists that the client did not ask for; the users' usage debits equal the rated retail of the
 * usage rows; no hold of the run is left active; every delivered top-up credited exactly once; and
 * the ledger reconciles. Sums are taken in SQL (numeric), never in floating point.
 */
import pg from 'pg';
import type { LoadResult } from './load-run.ts';
import { reconciliation, type StackTarget } from './stack-client.ts';

export interface BooksReport {
  problems: string[];
  reconciliationOk: boolean;
  usageRows: number;
  usageTransactions: number;
  userUsageDebitsUsd: string;
  ratedRetailUsd: string;
  topUpsCredited: number;
  /** Calls that failed in a way that leaves the client unsure whether it was charged (5xx, network). */
  ambiguousCalls: number;
}

export async function verifyBooks(target: StackTarget, databaseUrl: string, result: LoadResult): Promise<BooksReport> {
  const problems: string[] = [];
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const prefix = `${result.runId}-c`;
    const usage = await client.query<{ request_id: string; retail_usd: string; ledger_transaction_id: string | null }>(
      // Gateway calls are booked under the server's key (call:<uuid>); the client's id is kept beside it.
      `select client_request_id as request_id, retail_usd::text, ledger_transaction_id from usage_events where starts_with(client_request_id, $1)`,
      [prefix],
    );
    const usageTransactions = await client.query<{ request_id: string; transactions: number }>(
      `select request_id, count(*)::int as transactions from ledger_transactions
        where kind = 'usage' and starts_with(request_id, $1) group by request_id`,
      [prefix],
    );
    const [sums] = (
      await client.query<{ debits: string; retail: string }>(
        `select
           (select coalesce(-sum(e.amount), 0)::numeric(20,8)::text
              from ledger_entries e join ledger_transactions t on t.id = e.transaction_id join wallets w on w.id = e.wallet_id
             where t.kind = 'usage' and w.kind = 'user' and starts_with(t.request_id, $1)) as debits,
           (select coalesce(sum(retail_usd), 0)::numeric(20,8)::text from usage_events where starts_with(client_request_id, $1)) as retail`,
        [prefix],
      )
    ).rows;
    // A call cut off before its booking keeps its hold until the hold expires (docs/money.md); any other hold must be closed.
    const ambiguous = result.calls.filter((call) => call.status >= 500 || call.code === 'stream_incomplete' || call.code === 'network');
    // Per call, not only in sum: the user's debit in the call's transaction equals its rated retail.
    const mismatched = await client.query<{ request_id: string }>(
      `select u.client_request_id as request_id from usage_events u
         join ledger_entries e on e.transaction_id = u.ledger_transaction_id
         join wallets w on w.id = e.wallet_id and w.kind = 'user'
        where starts_with(u.client_request_id, $1) and -e.amount <> u.retail_usd`,
      [prefix],
    );
    for (const row of mismatched.rows) problems.push(`${row.request_id}: user debit differs from its rated retail`);
    const activeHolds = await client.query<{ count: number }>(
      `select count(*)::int as count from balance_holds h join gateway_calls g on g.money_key = h.request_id
        where starts_with(g.client_request_id, $1) and h.status = 'active' and g.client_request_id <> all($2::text[])`,
      [prefix, ambiguous.map((call) => call.requestId)],
    );
    const topUps = await client.query<{ idempotency_key: string; transactions: number }>(
      `select idempotency_key, count(*)::int as transactions from ledger_transactions
        where kind = 'top_up' and idempotency_key = any($1::text[]) group by idempotency_key`,
      [result.paidCheckouts.map((id) => `checkout:${id}`)],
    );

    const rowsById = new Map<string, typeof usage.rows>();
    for (const row of usage.rows) rowsById.set(row.request_id, [...(rowsById.get(row.request_id) ?? []), row]);
    const sent = new Set(result.calls.map((call) => call.requestId));
    let ambiguousCalls = 0;
    for (const call of result.calls) {
      const rows = rowsById.get(call.requestId) ?? [];
      if (call.status === 200 && call.code === null) {
        if (rows.length !== 1) problems.push(`${call.requestId}: answered 200 but has ${rows.length} usage rows`);
        else if (rows[0]!.retail_usd !== call.chargedUsd) {
          problems.push(`${call.requestId}: told ${call.chargedUsd}, booked ${rows[0]!.retail_usd}`);
        }
      } else if (call.status >= 500 || call.code === 'stream_incomplete' || call.code === 'network') {
        // The client cannot know whether the booking committed before the failure; it may be charged once, never twice.
        ambiguousCalls++;
        if (rows.length > 1) problems.push(`${call.requestId}: failed, yet ${rows.length} usage rows`);
      } else if (rows.length !== 0) {
        problems.push(`${call.requestId}: refused with ${call.code} but charged`);
      }
    }
    for (const requestId of rowsById.keys()) {
      if (!sent.has(requestId)) problems.push(`${requestId}: usage row for a request the client never sent`);
    }
    for (const row of usageTransactions.rows) {
      if (row.transactions !== 1) problems.push(`${row.request_id}: ${row.transactions} usage transactions`);
    }
    for (const row of usage.rows) {
      if (row.retail_usd !== '0.00000000' && row.ledger_transaction_id === null)
        problems.push(`${row.request_id}: charged without a transaction`);
    }
    if (sums!.debits !== sums!.retail) problems.push(`user usage debits ${sums!.debits} ≠ rated retail ${sums!.retail}`);
    if (activeHolds.rows[0]!.count !== 0) problems.push(`${activeHolds.rows[0]!.count} holds of the run still active`);
    const credited = new Map(topUps.rows.map((row) => [row.idempotency_key, row.transactions]));
    for (const id of result.paidCheckouts) {
      const count = credited.get(`checkout:${id}`) ?? 0;
      if (count !== 1) problems.push(`checkout ${id}: credited ${count} times`);
    }

    const books = await reconciliation(target);
    if (!books.ok) problems.push(`reconciliation not ok: ${JSON.stringify(books).slice(0, 500)}`);
    return {
      problems,
      reconciliationOk: books.ok,
      usageRows: usage.rows.length,
      usageTransactions: usageTransactions.rows.length,
      userUsageDebitsUsd: sums!.debits,
      ratedRetailUsd: sums!.retail,
      topUpsCredited: topUps.rows.length,
      ambiguousCalls,
    };
  } finally {
    await client.end();
  }
}
