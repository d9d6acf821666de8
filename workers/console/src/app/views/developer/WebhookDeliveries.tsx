/**
 * An endpoint's delivery log (docs/webhooks.md), newest first: event type, state, attempts, the
 * endpoint's last HTTP status or error, when; filtered by state, a page at a time with keyset "More
 * deliveries" (the next page appended). A row's event type opens the delivery in a panel beside the
 * log (its attempts, its payload, Resend). Deliveries happen in the background: Refresh reads again.
 */
import { useState } from 'react';
import { useApi } from '../../session.tsx';
import { useKeysetPages } from '../../ui/keyset-pages.ts';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Field, Loading, Section } from '../../ui/parts.tsx';
import { ScrollTable } from '../../ui/scroll-table.tsx';
import type { Page } from './types.ts';
import { WebhookDeliveryPanel } from './WebhookDeliveryPanel.tsx';
import {
  type DeliveryStatus,
  deliveryPageSize,
  endpointPath,
  deliveryStatuses,
  utcTime,
  type WebhookDelivery,
  type WebhookEndpoint,
} from './webhooks-wire.ts';

export function WebhookDeliveries({ endpoint }: { endpoint: WebhookEndpoint }) {
  const api = useApi();
  const path = `${endpointPath(endpoint.id)}/deliveries`;
  const [status, setStatus] = useState<DeliveryStatus | ''>('');
  const [generation, setGeneration] = useState(0);
  const first = useLoad(
    () => api.get<Page<WebhookDelivery>>(path, { status: status || undefined, limit: deliveryPageSize }),
    [api, path, status, generation],
  );
  const pages = useKeysetPages(first.data, (cursor) =>
    api.get<Page<WebhookDelivery>>(path, { status: status || undefined, limit: deliveryPageSize, cursor }),
  );
  const { rows, cursor } = pages;
  const [open, setOpen] = useState<string | null>(null);

  function refresh() {
    pages.reset();
    setGeneration((value) => value + 1);
  }
  function filter(next: DeliveryStatus | '') {
    setStatus(next);
    pages.reset();
    setOpen(null);
  }
  function close() {
    const id = open;
    setOpen(null);
    // Focus goes back to the row the panel was opened from.
    if (id) requestAnimationFrame(() => document.querySelector<HTMLButtonElement>(`[data-delivery="${id}"]`)?.focus());
  }

  return (
    <div className="deliveries-layout">
      <Section
        title={`Deliveries to ${endpoint.url}`}
        actions={
          <button type="button" className="ghost" onClick={refresh} disabled={first.loading}>
            Refresh<span className="sr-only"> deliveries</span>
          </button>
        }
      >
        <div className="narrow">
          <Field label="Status">
            {(id) => (
              <select id={id} value={status} onChange={(event) => filter(event.target.value as DeliveryStatus | '')}>
                <option value="">Any</option>
                {deliveryStatuses.map((one) => (
                  <option key={one} value={one}>
                    {one}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </div>
        <ErrorLine error={first.error} />
        {first.data ? (
          rows.length ? (
            <ScrollTable label="Deliveries">
              <table aria-label="Deliveries">
                <thead>
                  <tr>
                    <th scope="col">At</th>
                    <th scope="col">Event type</th>
                    <th scope="col">Status</th>
                    <th scope="col" className="num">
                      Attempts
                    </th>
                    <th scope="col">Last HTTP status</th>
                    <th scope="col">Last error</th>
                    <th scope="col">Next attempt</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((delivery) => (
                    <tr key={delivery.id}>
                      <th scope="row">{utcTime(delivery.created_at)}</th>
                      <td>
                        <button
                          type="button"
                          className="link"
                          data-delivery={delivery.id}
                          aria-expanded={open === delivery.id}
                          onClick={() => setOpen(open === delivery.id ? null : delivery.id)}
                        >
                          {delivery.event.type}
                          <span className="sr-only"> at {utcTime(delivery.created_at)}</span>
                        </button>
                      </td>
                      <td>{delivery.status}</td>
                      <td className="num">{delivery.attempts}</td>
                      <td>{delivery.last_status ?? '—'}</td>
                      <td>{delivery.last_error ?? '—'}</td>
                      <td>{utcTime(delivery.next_attempt_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollTable>
          ) : (
            <p className="muted">
              {status ? `No ${status} deliveries.` : 'No deliveries yet: each event this endpoint receives makes one.'}
            </p>
          )
        ) : first.loading ? (
          <Loading what="deliveries" />
        ) : null}
        <ErrorLine error={pages.error} />
        <div className="actions">
          <button type="button" className="ghost" disabled={!cursor || pages.busy} onClick={pages.loadMore}>
            More deliveries
          </button>
          <span className="muted" aria-live="polite">
            {first.data ? `${rows.length} shown${cursor ? '' : ', no more'}` : ''}
          </span>
        </div>
      </Section>
      {open ? (
        <WebhookDeliveryPanel
          key={open}
          endpointId={endpoint.id}
          deliveryId={open}
          generation={generation}
          onClose={close}
          onResent={refresh}
        />
      ) : null}
    </div>
  );
}
