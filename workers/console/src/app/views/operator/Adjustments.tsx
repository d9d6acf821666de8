/**
 * Wallet adjustments: a balanced correction (adjustment, refund, chargeback; credit or debit) of
 * one wallet with a reason. Each form carries an idempotency key made when the form is (re)opened:
 * sending twice (a double click, a retry after a network failure) books once; after a booking the
 * form gets a new key for the next one.
 */
import { useState } from 'react';
import { useApi } from '../../session.tsx';
import { ErrorLine, Field, Section, usd } from '../../ui/parts.tsx';
import { toWireAmount } from './wire-amount.ts';

interface Adjustment {
  transaction_id: string;
  wallet_id: string;
  kind: string;
  direction: 'credit' | 'debit';
  amount_usd: string;
  reason: string;
  idempotency_key: string | null;
}

const newKey = () => `console-${crypto.randomUUID()}`;
const kinds = ['adjustment', 'refund', 'chargeback'] as const;

export function Adjustments() {
  const api = useApi();
  const [walletId, setWalletId] = useState('');
  const [kind, setKind] = useState<(typeof kinds)[number]>('adjustment');
  const [direction, setDirection] = useState<'credit' | 'debit'>('credit');
  const [amount, setAmount] = useState('');
  const [reason, setReason] = useState('');
  const [key, setKey] = useState(newKey);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [booked, setBooked] = useState<Adjustment | undefined>();
  const wire = toWireAmount(amount);
  const ready = walletId.trim() !== '' && wire !== undefined && reason.trim() !== '';

  return (
    <>
      <h1>Wallet adjustments</h1>
      <Section title="Adjust a wallet">
        <form
          onSubmit={async (event) => {
            event.preventDefault();
            if (!ready) return;
            setBusy(true);
            setError(undefined);
            try {
              const response = await api.request<Adjustment>(`/v1/admin/wallets/${encodeURIComponent(walletId.trim())}/adjustments`, {
                method: 'POST',
                body: { kind, direction, amount_usd: wire, reason: reason.trim(), idempotency_key: key },
              });
              setBooked(response);
              // Booked: the next adjustment is a new one, with a new key.
              setKey(newKey());
              setAmount('');
              setReason('');
            } catch (thrown) {
              // The key stays: sending the same form again cannot book twice.
              setError(thrown);
            } finally {
              setBusy(false);
            }
          }}
        >
          <div className="form-grid">
            <Field label="Wallet ID" hint="The wallet's UUID (payouts and reports name it).">
              {(id, describedBy) => (
                <input
                  id={id}
                  value={walletId}
                  autoComplete="off"
                  aria-describedby={describedBy}
                  onChange={(event) => setWalletId(event.target.value)}
                />
              )}
            </Field>
            <Field label="Kind">
              {(id) => (
                <select id={id} value={kind} onChange={(event) => setKind(event.target.value as (typeof kinds)[number])}>
                  {kinds.map((one) => (
                    <option key={one} value={one}>
                      {one}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <Field label="Direction">
              {(id) => (
                <select id={id} value={direction} onChange={(event) => setDirection(event.target.value as 'credit' | 'debit')}>
                  <option value="credit">credit (adds to the wallet)</option>
                  <option value="debit">debit (takes from the wallet)</option>
                </select>
              )}
            </Field>
            <Field label="Amount (USD)" hint="Up to 8 decimals, e.g. 12.50.">
              {(id, describedBy) => (
                <input
                  id={id}
                  inputMode="decimal"
                  value={amount}
                  aria-describedby={describedBy}
                  aria-invalid={amount !== '' && !wire}
                  onChange={(event) => setAmount(event.target.value)}
                />
              )}
            </Field>
          </div>
          <Field label="Reason" hint="Kept with the transaction and in the audit log.">
            {(id, describedBy) => (
              <textarea
                id={id}
                rows={2}
                value={reason}
                aria-describedby={describedBy}
                onChange={(event) => setReason(event.target.value)}
              />
            )}
          </Field>
          <p className="muted">
            Idempotency key of this form: <code data-testid="idempotency-key">{key}</code>
          </p>
          <div className="actions">
            <button type="submit" disabled={busy || !ready}>
              Book adjustment
            </button>
          </div>
          <ErrorLine error={error} />
          <p className="ok" role="status">
            {booked && !error
              ? `Booked ${booked.direction} of ${usd(booked.amount_usd)} (${booked.kind}) on wallet ${booked.wallet_id}: transaction ${booked.transaction_id}.`
              : ''}
          </p>
        </form>
      </Section>
    </>
  );
}
