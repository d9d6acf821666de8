/**
 * One delivery in full, beside its endpoint's delivery log: the event, the delivery's state, every
 * attempt (when, the endpoint's HTTP status or the error, how long) and the payload as sent (pretty
 * JSON), with Resend (same event id, sent now: a pending one without waiting for its next retry, a
 * delivered or failed one with its attempts starting again). Focus moves to the heading when the panel opens; Close gives it back.
 */
import { useEffect, useId, useRef } from 'react';
import { useApi } from '../../session.tsx';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Facts, Loading, Outcome } from '../../ui/parts.tsx';
import { ScrollTable } from '../../ui/scroll-table.tsx';
import { useAction } from '../../ui/useAction.ts';
import { endpointPath, utcTime, type WebhookDeliveryDetail } from './webhooks-wire.ts';

export function WebhookDeliveryPanel({
  endpointId,
  deliveryId,
  generation,
  onClose,
  onResent,
}: {
  endpointId: string;
  deliveryId: string;
  /** Changes when the log is refreshed: the panel reads the delivery again. */
  generation: number;
  onClose(): void;
  onResent(): void;
}) {
  const api = useApi();
  const headingId = useId();
  const resendHint = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const path = `${endpointPath(endpointId)}/deliveries/${encodeURIComponent(deliveryId)}`;
  const delivery = useLoad(() => api.get<WebhookDeliveryDetail>(path), [api, path, generation]);
  const resend = useAction();
  // Keyed by the delivery: focus moves to the heading once per delivery opened.
  useEffect(() => heading.current?.focus(), []);
  const detail = delivery.data;

  async function resendDelivery() {
    if (await resend.run(() => api.post(`${path}/resend`), 'Queued again: refresh the log to see its attempt.')) onResent();
  }

  return (
    <section className="card delivery-detail" aria-labelledby={headingId}>
      <div className="card__head">
        <h2 id={headingId} ref={heading} tabIndex={-1}>
          Delivery details
        </h2>
        <button type="button" className="ghost" onClick={onClose}>
          Close<span className="sr-only"> delivery details</span>
        </button>
      </div>
      <ErrorLine error={delivery.error} />
      {detail ? (
        <>
          <Facts
            label="Delivery"
            rows={[
              ['Event id', <code key="event">{detail.event.id}</code>],
              ['Event type', <code key="type">{detail.event.type}</code>],
              ['Event at', utcTime(detail.event.created_at)],
              ['Delivery id', <code key="delivery">{detail.id}</code>],
              ['Status', detail.status],
              ['Attempts', String(detail.attempts)],
              ['Last HTTP status', detail.last_status === null ? '—' : String(detail.last_status)],
              ['Last error', detail.last_error ?? '—'],
              ['Next attempt', utcTime(detail.next_attempt_at)],
              ['Delivered at', utcTime(detail.delivered_at)],
            ]}
          />
          <div className="actions">
            <button type="button" onClick={resendDelivery} disabled={resend.busy} aria-describedby={resendHint}>
              Resend
            </button>
            <small id={resendHint} className="muted">
              {detail.status === 'pending'
                ? `Next attempt at ${utcTime(detail.next_attempt_at)}; Resend tries it now (same event id).`
                : 'Sends the same event (same id) again now; its attempts start again.'}
            </small>
          </div>
          <Outcome error={resend.error} done={resend.done} />
          <h3>Attempts</h3>
          {detail.attempt_log.length ? (
            <ScrollTable label="Attempts">
              <table aria-label="Attempts">
                <thead>
                  <tr>
                    <th scope="col">At</th>
                    <th scope="col">HTTP status</th>
                    <th scope="col">Error</th>
                    <th scope="col" className="num">
                      Duration
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {detail.attempt_log.map((attempt, index) => (
                    // biome-ignore lint/suspicious/noArrayIndexKey: attempts are in order and never move.
                    <tr key={index}>
                      <th scope="row">{utcTime(attempt.attempted_at)}</th>
                      <td>{attempt.status_code ?? 'no answer'}</td>
                      <td>{attempt.error ?? '—'}</td>
                      <td className="num">{`${attempt.duration_ms.toLocaleString('en-US')} ms`}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollTable>
          ) : (
            <p className="muted">Not tried yet.</p>
          )}
          <h3>Payload</h3>
          <p className="muted">The body sent (signed as docs/webhooks.md says), with the same event id at every attempt.</p>
          <pre className="payload">{JSON.stringify(detail.payload, null, 2)}</pre>
        </>
      ) : delivery.loading ? (
        <Loading what="delivery" />
      ) : null}
    </section>
  );
}
