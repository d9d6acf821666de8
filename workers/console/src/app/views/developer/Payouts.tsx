/**
 * Payouts: the developer's payouts, newest first, with their state and the dates it changed,
 * filtered by state, a page at a time (payouts are run and reviewed by the operator).
 */
import { useState } from 'react';
import { useApi } from '../../session.tsx';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Field, Loading, Section, usd } from '../../ui/parts.tsx';
import type { Page } from './types.ts';
import { ScrollTable } from '../../ui/scroll-table.tsx';

interface Payout {
  id: string;
  amount_usd: string;
  status: string;
  operator_note: string | null;
  created_at: string;
  approved_at: string | null;
  paid_at: string | null;
  closed_at: string | null;
}

const statuses = ['pending', 'processing', 'paid', 'cancelled', 'rejected'];
const at = (iso: string | null) => (iso ? iso.slice(0, 16).replace('T', ' ') : '—');

export function Payouts() {
  const api = useApi();
  const [status, setStatus] = useState('');
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const payouts = useLoad(
    () => api.get<Page<Payout>>('/v1/developer/payouts', { limit: 50, status: status || undefined, cursor }),
    [api, status, cursor],
  );
  return (
    <>
      <h1>Payouts</h1>
      <Section title="History">
        <Field label="State">
          {(id) => (
            <select
              id={id}
              value={status}
              onChange={(event) => {
                setStatus(event.target.value);
                setCursors([]);
              }}
            >
              <option value="">All</option>
              {statuses.map((one) => (
                <option key={one} value={one}>
                  {one}
                </option>
              ))}
            </select>
          )}
        </Field>
        <ErrorLine error={payouts.error} />
        {payouts.data ? (
          payouts.data.data.length ? (
            <ScrollTable label="Payouts">
              <table aria-label="Payouts">
                <thead>
                  <tr>
                    <th scope="col">Created</th>
                    <th scope="col" className="num">
                      Amount
                    </th>
                    <th scope="col">State</th>
                    <th scope="col">Approved</th>
                    <th scope="col">Paid</th>
                    <th scope="col">Closed</th>
                    <th scope="col">Operator note</th>
                  </tr>
                </thead>
                <tbody>
                  {payouts.data.data.map((payout) => (
                    <tr key={payout.id}>
                      <th scope="row">{at(payout.created_at)}</th>
                      <td className="num">{usd(payout.amount_usd)}</td>
                      <td>{payout.status}</td>
                      <td>{at(payout.approved_at)}</td>
                      <td>{at(payout.paid_at)}</td>
                      <td>{at(payout.closed_at)}</td>
                      <td>{payout.operator_note ?? '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollTable>
          ) : (
            <p className="muted">No payouts{status ? ` in state ${status}` : ''} yet.</p>
          )
        ) : payouts.loading ? (
          <Loading what="payouts" />
        ) : null}
        <div className="actions">
          <button type="button" className="ghost" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
            Previous page
          </button>
          <button
            type="button"
            className="ghost"
            disabled={!payouts.data?.next_cursor}
            onClick={() => payouts.data?.next_cursor && setCursors([...cursors, payouts.data.next_cursor])}
          >
            Next page
          </button>
        </div>
      </Section>
    </>
  );
}
