/** payouts.csv: one line per payout (docs/payments.md §Reports), oldest first. */
import { sql } from 'drizzle-orm';
import { queryRows } from '#shared/query.ts';
import type { PagedReport } from './csv-stream.ts';

export interface PayoutsReportRow {
  created_at: string;
  id: string;
  developer_id: string;
  developer_name: string;
  wallet_id: string;
  amount_usd: string;
  status: string;
  operator_note: string | null;
  approved_at: string | null;
  paid_at: string | null;
  ledger_transaction_id: string | null;
}

const utc = (column: string) => sql.raw(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`);

export const payoutsReport: PagedReport<PayoutsReportRow> = {
  columns: [
    { name: 'created_at', value: (row) => row.created_at },
    { name: 'payout_id', value: (row) => row.id },
    { name: 'developer_id', value: (row) => row.developer_id },
    { name: 'developer_name', value: (row) => row.developer_name },
    { name: 'wallet_id', value: (row) => row.wallet_id },
    { name: 'amount_usd', value: (row) => row.amount_usd, kind: 'number' },
    { name: 'status', value: (row) => row.status },
    { name: 'operator_note', value: (row) => row.operator_note },
    { name: 'approved_at', value: (row) => row.approved_at },
    { name: 'paid_at', value: (row) => row.paid_at },
    { name: 'ledger_transaction_id', value: (row) => row.ledger_transaction_id },
  ],
  page: (db, scope, after, limit) =>
    queryRows<PayoutsReportRow>(
      db,
      sql`select ${utc('p.created_at')} as created_at, p.id, p.developer_id, d.name as developer_name, p.wallet_id,
                 p.amount::text as amount_usd, p.status, p.operator_note, ${utc('p.approved_at')} as approved_at,
                 ${utc('p.paid_at')} as paid_at, p.ledger_transaction_id
          from payouts p join developers d on d.id = p.developer_id
          where (${scope.from}::timestamptz is null or p.created_at >= ${scope.from}::timestamptz)
            and (${scope.to}::timestamptz is null or p.created_at < ${scope.to}::timestamptz)
            and (${scope.developerId}::uuid is null or p.developer_id = ${scope.developerId}::uuid)
            and (${after?.created_at ?? null}::timestamptz is null
                 or (p.created_at, p.id) > (${after?.created_at ?? null}::timestamptz, ${after?.id ?? null}::uuid))
          order by p.created_at, p.id
          limit ${limit}`,
    ),
};
