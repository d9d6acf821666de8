/**
 * The payout review queue: run the payout job (one pending payout per developer wallet at or above a
 * threshold), then per payout approve (pending → processing) or cancel/reject with a note, and mark
 * a processing payout paid. Every action goes through the admin payouts API and its state rules;
 * a refusal (e.g. 409 invalid_state) is shown with the API's message.
 */
import { useId, useState } from 'react';
import { useApi } from '../../session.tsx';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Field, Loading, Outcome, Section, usd } from '../../ui/parts.tsx';
import { toWireAmount } from './wire-amount.ts';
import { ScrollTable } from '../../ui/scroll-table.tsx';

const statuses = ['pending', 'processing', 'paid', 'cancelled', 'rejected'] as const;
type PayoutStatus = (typeof statuses)[number];

export interface Payout {
  id: string;
  developer_id: string;
  wallet_id: string;
  amount_usd: string;
  status: PayoutStatus;
  operator_note: string | null;
  created_at: string;
  approved_at: string | null;
  paid_at: string | null;
  closed_at: string | null;
}

const shortId = (id: string) => id.slice(0, 8);
const when = (iso: string | null) => (iso ? iso.replace('T', ' ').slice(0, 16) : '—');

function RunPayouts({ onDone }: { onDone(): void }) {
  const api = useApi();
  const [threshold, setThreshold] = useState('10.00');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState('');
  const amount = toWireAmount(threshold);
  return (
    <Section title="Run payouts">
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          if (!amount) return;
          setBusy(true);
          setError(undefined);
          try {
            const created = await api.post<{ data: Payout[] }>('/v1/admin/payouts/run-mock', { threshold_usd: amount });
            setDone(`${created.data.length} payout${created.data.length === 1 ? '' : 's'} created.`);
            onDone();
          } catch (thrown) {
            setError(thrown);
            setDone('');
          } finally {
            setBusy(false);
          }
        }}
      >
        <div className="form-grid">
          <Field label="Threshold (USD)" hint="One pending payout per developer wallet whose available balance reaches it.">
            {(id, describedBy) => (
              <input
                id={id}
                inputMode="decimal"
                value={threshold}
                aria-describedby={describedBy}
                aria-invalid={!amount}
                onChange={(event) => setThreshold(event.target.value)}
              />
            )}
          </Field>
        </div>
        <div className="actions">
          <button type="submit" disabled={busy || !amount}>
            Run payouts
          </button>
        </div>
        <Outcome error={error} done={done} />
      </form>
    </Section>
  );
}

/** The note and the buttons of one payout, by its state. */
function PayoutActions({ payout, onDone }: { payout: Payout; onDone(): void }) {
  const api = useApi();
  const noteId = useId();
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const act = async (action: 'approve' | 'cancel' | 'reject' | 'mark-paid') => {
    setBusy(true);
    setError(undefined);
    try {
      const body = action === 'mark-paid' ? (note.trim() ? { operator_note: note.trim() } : {}) : { operator_note: note.trim() };
      await api.post<Payout>(`/v1/admin/payouts/${payout.id}/${action}`, body);
      setNote('');
      onDone();
    } catch (thrown) {
      setError(thrown);
    } finally {
      setBusy(false);
    }
  };
  if (payout.status !== 'pending' && payout.status !== 'processing') return <span className="muted">—</span>;
  const needsNote = payout.status === 'pending';
  return (
    <div>
      <label htmlFor={noteId} className="sr-only">{`Note for payout ${shortId(payout.id)}`}</label>
      <input
        id={noteId}
        placeholder={needsNote ? 'Note (required)' : 'Note (optional)'}
        value={note}
        onChange={(event) => setNote(event.target.value)}
      />
      <div className="actions">
        {needsNote ? (
          <>
            <button type="button" disabled={busy || !note.trim()} onClick={() => act('approve')}>
              Approve
            </button>
            <button type="button" className="ghost" disabled={busy || !note.trim()} onClick={() => act('cancel')}>
              Cancel payout
            </button>
            <button type="button" className="danger" disabled={busy || !note.trim()} onClick={() => act('reject')}>
              Reject
            </button>
          </>
        ) : (
          <button type="button" disabled={busy} onClick={() => act('mark-paid')}>
            Mark paid
          </button>
        )}
      </div>
      <ErrorLine error={error} />
    </div>
  );
}

export function Payouts() {
  const api = useApi();
  const [status, setStatus] = useState<PayoutStatus | ''>('');
  const filterId = useId();
  const payouts = useLoad(
    () => api.get<{ data: Payout[] }>('/v1/admin/payouts', { status: status || undefined, limit: 100 }),
    [api, status],
  );
  return (
    <>
      <h1>Payouts</h1>
      <RunPayouts onDone={payouts.reload} />
      <Section
        title="Review queue"
        actions={
          <span className="actions">
            <label htmlFor={filterId}>Status</label>
            <select id={filterId} value={status} onChange={(event) => setStatus(event.target.value as PayoutStatus | '')}>
              <option value="">All</option>
              {statuses.map((one) => (
                <option key={one} value={one}>
                  {one}
                </option>
              ))}
            </select>
          </span>
        }
      >
        <ErrorLine error={payouts.error} />
        {payouts.data ? (
          payouts.data.data.length === 0 ? (
            <p className="muted">No payouts{status ? ` in state ${status}` : ''}.</p>
          ) : (
            <ScrollTable label="Payouts">
              <table>
                <caption className="sr-only">Payouts, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Payout</th>
                    <th scope="col">Developer</th>
                    <th scope="col" className="num">
                      Amount
                    </th>
                    <th scope="col">Status</th>
                    <th scope="col">Created</th>
                    <th scope="col">Note</th>
                    <th scope="col">Action</th>
                  </tr>
                </thead>
                <tbody>
                  {payouts.data.data.map((payout) => (
                    <tr key={payout.id} data-payout={payout.id} data-developer={payout.developer_id} data-status={payout.status}>
                      <td>
                        <code title={payout.id}>{shortId(payout.id)}</code>
                      </td>
                      <td>
                        <code title={payout.developer_id}>{shortId(payout.developer_id)}</code>
                      </td>
                      <td className="num">{usd(payout.amount_usd)}</td>
                      <td>{payout.status}</td>
                      <td>{when(payout.created_at)}</td>
                      <td>{payout.operator_note ?? '—'}</td>
                      <td>
                        <PayoutActions payout={payout} onDone={payouts.reload} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollTable>
          )
        ) : payouts.loading ? (
          <Loading what="payouts" />
        ) : null}
      </Section>
    </>
  );
}
