/**
 * Reconciliation and the upstream audit at a glance: whether the ledger agrees with itself (every
 * wallet equals its entries, every transaction sums to zero) and with the gateway's calls (every
 * paid call that ended was billed). Problems are listed; receivables are shown, as they are owed
 * money, not violations.
 */
import { useApi } from '../../session.tsx';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Loading, Section, usd } from '../../ui/parts.tsx';
import { ScrollTable } from '../../ui/scroll-table.tsx';

interface Reconciliation {
  ok: boolean;
  checked_at: string;
  counts: { wallets: number; transactions: number; entries: number };
  wallet_mismatches: Array<{ wallet_id: string; kind: string; balance_usd: string; entries_sum_usd: string; difference_usd: string }>;
  unbalanced_transactions: Array<{ transaction_id: string; kind: string; sum_usd: string }>;
  negative_wallets: Array<{ wallet_id: string; kind: string; balance_usd: string }>;
  receivables: Array<{ wallet_id: string; kind: string; outstanding_usd: string }>;
  receivables_total_usd: string;
}

interface UpstreamAudit {
  ok: boolean;
  paid_calls: number;
  unbilled_calls: number;
  in_flight: number;
  receivable_bookings: number;
}

const count = (value: number) => value.toLocaleString('en-US');

function Verdict({ ok, good, bad }: { ok: boolean; good: string; bad: string }) {
  return (
    <p className={ok ? 'ok' : 'error'} data-verdict={ok ? 'ok' : 'problem'}>
      <strong>{ok ? good : bad}</strong>
    </p>
  );
}

function Problems({ title, rows }: { title: string; rows: Array<Record<string, string>> }) {
  if (rows.length === 0) return null;
  const columns = Object.keys(rows[0]!);
  return (
    <ScrollTable label={title}>
      <table>
        <caption>{title}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column} scope="col">
                {column.replaceAll('_', ' ')}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={columns.map((column) => row[column]).join('|')}>
              {columns.map((column) => (
                <td key={column}>{column.endsWith('_usd') ? usd(row[column]) : <code>{row[column]}</code>}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollTable>
  );
}

export function Health() {
  const api = useApi();
  const ledger = useLoad(() => api.get<Reconciliation>('/v1/admin/reconciliation/ledger'), [api]);
  const upstream = useLoad(() => api.get<UpstreamAudit>('/v1/admin/reconciliation/upstream'), [api]);
  return (
    <>
      <h1>Reconciliation</h1>
      <p className="muted">
        <button
          type="button"
          className="ghost"
          onClick={() => {
            ledger.reload();
            upstream.reload();
          }}
        >
          Check again
        </button>
      </p>
      <div className="grid">
        <Section title="Ledger">
          <ErrorLine error={ledger.error} />
          {ledger.data ? (
            <>
              <Verdict ok={ledger.data.ok} good="Balanced: every wallet equals its entries" bad="Mismatches found" />
              <dl className="stats" aria-label="Ledger reconciliation">
                <div>
                  <dt>Wallets</dt>
                  <dd>{count(ledger.data.counts.wallets)}</dd>
                </div>
                <div>
                  <dt>Transactions</dt>
                  <dd>{count(ledger.data.counts.transactions)}</dd>
                </div>
                <div>
                  <dt>Entries</dt>
                  <dd>{count(ledger.data.counts.entries)}</dd>
                </div>
                <div>
                  <dt>Receivables</dt>
                  <dd>{usd(ledger.data.receivables_total_usd)}</dd>
                </div>
              </dl>
              <p className="muted">Checked at {ledger.data.checked_at.replace('T', ' ').slice(0, 19)} UTC.</p>
              <Problems title="Wallets that differ from their entries" rows={ledger.data.wallet_mismatches} />
              <Problems title="Transactions that do not sum to zero" rows={ledger.data.unbalanced_transactions} />
              <Problems title="Wallets below zero without a receivable" rows={ledger.data.negative_wallets} />
            </>
          ) : ledger.loading ? (
            <Loading what="the reconciliation" />
          ) : null}
        </Section>
        <Section title="Upstream audit">
          <ErrorLine error={upstream.error} />
          {upstream.data ? (
            <>
              <Verdict ok={upstream.data.ok} good="Every paid call that ended is billed" bad="Unbilled paid calls found" />
              <dl className="stats" aria-label="Upstream audit">
                <div>
                  <dt>Paid calls</dt>
                  <dd>{count(upstream.data.paid_calls)}</dd>
                </div>
                <div>
                  <dt>Unbilled</dt>
                  <dd>{count(upstream.data.unbilled_calls)}</dd>
                </div>
                <div>
                  <dt>In flight</dt>
                  <dd>{count(upstream.data.in_flight)}</dd>
                </div>
                <div>
                  <dt>Receivable bookings</dt>
                  <dd>{count(upstream.data.receivable_bookings)}</dd>
                </div>
              </dl>
            </>
          ) : upstream.loading ? (
            <Loading what="the upstream audit" />
          ) : null}
        </Section>
      </div>
    </>
  );
}
