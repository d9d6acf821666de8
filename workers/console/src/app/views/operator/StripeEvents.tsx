/**
 * Stripe: the webhook events the API processed, newest first (Stripe's deliveries and replays), and
 * the replay tool for a checkout whose webhook never arrived: the API asks Stripe about the session
 * and credits it once if it is paid; the outcome is shown as the API reports it.
 */
import { useState } from 'react';
import { useApi } from '../../session.tsx';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Field, Loading, Section } from '../../ui/parts.tsx';
import { ScrollTable } from '../../ui/scroll-table.tsx';

interface WebhookEvent {
  event_id: string;
  type: string;
  source: 'stripe' | 'replay';
  received_at: string;
}

interface ReplayResult {
  checkout_session_id: string;
  stripe_status: string | null;
  payment_status: string;
  amount_cents: number | null;
  credited: boolean;
  outcome: string;
  event_id: string | null;
}

const outcomeText: Record<string, string> = {
  credited: 'Credited: the wallet now holds the top-up.',
  already_completed: 'Already credited before: nothing changed.',
  payment_not_completed: 'Not paid at Stripe: nothing credited.',
  unknown_session: 'Stripe knows this session but Faucet does not: nothing credited.',
  amount_mismatch: "Stripe's amount differs from the checkout's: nothing credited (audited).",
  ignored: 'The session charges nothing: nothing credited.',
};

function Replay({ onDone }: { onDone(): void }) {
  const api = useApi();
  const [sessionId, setSessionId] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [result, setResult] = useState<ReplayResult | undefined>();
  return (
    <Section title="Replay a checkout">
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          setBusy(true);
          setError(undefined);
          setResult(undefined);
          try {
            setResult(await api.post<ReplayResult>(`/v1/admin/stripe/checkout-sessions/${encodeURIComponent(sessionId.trim())}/replay`));
            onDone();
          } catch (thrown) {
            setError(thrown);
          } finally {
            setBusy(false);
          }
        }}
      >
        <Field label="Checkout session ID" hint="cs_… as the checkout endpoint returned it; Stripe is asked whether it was paid.">
          {(id, describedBy) => (
            <input
              id={id}
              value={sessionId}
              autoComplete="off"
              aria-describedby={describedBy}
              onChange={(event) => setSessionId(event.target.value)}
            />
          )}
        </Field>
        <div className="actions">
          <button type="submit" disabled={busy || !sessionId.trim()}>
            Replay
          </button>
        </div>
        <ErrorLine error={error} />
      </form>
      <div role="status">
        {result ? (
          <dl className="stats" aria-label="Replay outcome" data-outcome={result.outcome}>
            <div>
              <dt>Outcome</dt>
              <dd>{outcomeText[result.outcome] ?? result.outcome}</dd>
            </div>
            <div>
              <dt>At Stripe</dt>
              <dd>{`${result.stripe_status ?? '—'}, ${result.payment_status}`}</dd>
            </div>
            <div>
              <dt>Amount</dt>
              <dd>{result.amount_cents === null ? '—' : `$${(result.amount_cents / 100).toFixed(2)}`}</dd>
            </div>
          </dl>
        ) : null}
      </div>
    </Section>
  );
}

export function StripeEvents() {
  const api = useApi();
  const events = useLoad(() => api.get<{ data: WebhookEvent[] }>('/v1/admin/stripe/webhook-events', { limit: 50 }), [api]);
  return (
    <>
      <h1>Stripe</h1>
      <Replay onDone={events.reload} />
      <Section
        title="Webhook events received"
        actions={
          <button type="button" className="ghost" onClick={events.reload}>
            Refresh
          </button>
        }
      >
        <ErrorLine error={events.error} />
        {events.data ? (
          events.data.data.length === 0 ? (
            <p className="muted">No events yet.</p>
          ) : (
            <ScrollTable label="Webhook events">
              <table>
                <caption className="sr-only">Processed Stripe webhook events, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Received</th>
                    <th scope="col">Type</th>
                    <th scope="col">Source</th>
                    <th scope="col">Event</th>
                  </tr>
                </thead>
                <tbody>
                  {events.data.data.map((event) => (
                    <tr key={event.event_id}>
                      <td>{event.received_at.replace('T', ' ').slice(0, 19)}</td>
                      <td>{event.type}</td>
                      <td>{event.source}</td>
                      <td>
                        <code>{event.event_id}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollTable>
          )
        ) : events.loading ? (
          <Loading what="events" />
        ) : null}
      </Section>
    </>
  );
}
