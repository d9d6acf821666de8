/**
 * Webhooks (docs/webhooks.md): the developer's endpoints (URL, event types, enabled, the secret's
 * hint, the end of a rotation's overlap); for the chosen one its delivery log and its settings
 * (change, rotate the secret, delete); and a form to add one (its signing secret shown once).
 */
import { useId, useRef, useState } from 'react';
import type { ApiClient } from '../../api.ts';
import { href } from '../../router.ts';
import { useApi } from '../../session.tsx';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Loading, Section } from '../../ui/parts.tsx';
import { ScrollTable } from '../../ui/scroll-table.tsx';
import { SecretOnce } from '../../ui/secret-once.tsx';
import { useAction } from '../../ui/useAction.ts';
import { WebhookDeliveries } from './WebhookDeliveries.tsx';
import { EndpointForm, type EndpointFields } from './WebhookEndpointForm.tsx';
import { WebhookEndpointSettings } from './WebhookEndpointSettings.tsx';
import { eventTypesText, utcTime, type WebhookEndpoint, type WebhookEndpointWithSecret } from './webhooks-wire.ts';

function AddEndpoint({ api, onCreated }: { api: ApiClient; onCreated(endpoint: WebhookEndpoint): void }) {
  const create = useAction();
  const [created, setCreated] = useState<WebhookEndpointWithSecret | null>(null);
  // A new form after each endpoint added: the fields are empty again.
  const [formKey, setFormKey] = useState(0);
  async function submit(fields: EndpointFields) {
    setCreated(null);
    let made: WebhookEndpointWithSecret | undefined;
    const ok = await create.run(async () => {
      made = await api.post<WebhookEndpointWithSecret>('/v1/developer/webhooks', fields);
    }, 'Endpoint added.');
    if (ok && made) {
      setCreated(made);
      setFormKey((value) => value + 1);
      onCreated(made);
    }
  }
  return (
    <Section title="Add an endpoint">
      <EndpointForm key={formKey} label="Add an endpoint" submitLabel="Add endpoint" action={create} onSubmit={submit} />
      {created ? <SecretOnce title={`Signing secret of ${created.url}`} secret={created.secret} onDone={() => setCreated(null)} /> : null}
    </Section>
  );
}

function EndpointTable({
  endpoints,
  current,
  onChoose,
}: {
  endpoints: WebhookEndpoint[];
  current: WebhookEndpoint | undefined;
  onChoose(id: string): void;
}) {
  return (
    <ScrollTable label="Webhook endpoints">
      <table aria-label="Webhook endpoints">
        <thead>
          <tr>
            <th scope="col">URL</th>
            <th scope="col">Event types</th>
            <th scope="col">Enabled</th>
            <th scope="col">Secret</th>
            <th scope="col">Previous secret signs until</th>
            <th scope="col">Open</th>
          </tr>
        </thead>
        <tbody>
          {endpoints.map((endpoint) => (
            <tr key={endpoint.id} aria-current={endpoint === current ? 'true' : undefined}>
              <th scope="row">
                <code className="endpoint-url">{endpoint.url}</code>
                {endpoint.description ? <div className="muted">{endpoint.description}</div> : null}
              </th>
              <td>{eventTypesText(endpoint.event_types)}</td>
              <td>{endpoint.enabled ? 'yes' : 'no'}</td>
              <td>
                <code>{endpoint.secret_hint}</code>
              </td>
              <td>{utcTime(endpoint.previous_secret_expires_at)}</td>
              <td>
                <button type="button" className="ghost" onClick={() => onChoose(endpoint.id)} aria-pressed={endpoint === current}>
                  Manage<span className="sr-only"> {endpoint.url}</span>
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollTable>
  );
}

export function Webhooks() {
  const api = useApi();
  const endpoints = useLoad(() => api.get<{ data: WebhookEndpoint[] }>('/v1/developer/webhooks'), [api]);
  const [chosen, setChosen] = useState<string | null>(null);
  // Deleted here, until the list is read again: nothing more is asked of them.
  const [deleted, setDeleted] = useState<string[]>([]);
  const [notice, setNotice] = useState('');
  const headingId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const list = endpoints.data?.data.filter((endpoint) => !deleted.includes(endpoint.id));
  const endpoint = list?.find((one) => one.id === chosen) ?? list?.[0];

  function choose(id: string) {
    setNotice('');
    setChosen(id);
  }
  function onDeleted(gone: WebhookEndpoint) {
    setDeleted((previous) => [...previous, gone.id]);
    setChosen(null);
    setNotice(`Endpoint ${gone.url} deleted: nothing more is sent to it.`);
    endpoints.reload();
    // The deleting button is gone: focus goes to the list.
    heading.current?.focus();
  }

  return (
    <>
      <h1>Webhooks</h1>
      <p className="muted">
        Faucet signs each event and POSTs it to the endpoints subscribed to its type, retrying until it is delivered or fails; every attempt
        is logged here. An app's low-balance threshold (for <code>end_user.balance_low</code>) is set under{' '}
        <a href={href('/developer/apps')}>Apps and features</a>.
      </p>
      <section className="card" aria-labelledby={headingId}>
        <div className="card__head">
          <h2 id={headingId} ref={heading} tabIndex={-1}>
            Endpoints
          </h2>
        </div>
        <ErrorLine error={endpoints.error} />
        {list ? (
          list.length ? (
            <EndpointTable endpoints={list} current={endpoint} onChoose={choose} />
          ) : (
            <p className="muted">No endpoints yet.</p>
          )
        ) : endpoints.loading ? (
          <Loading what="endpoints" />
        ) : null}
        <p className="ok" role="status">
          {notice}
        </p>
      </section>
      {endpoint ? (
        <>
          <WebhookDeliveries key={`deliveries-${endpoint.id}`} endpoint={endpoint} />
          <WebhookEndpointSettings
            key={endpoint.id}
            api={api}
            endpoint={endpoint}
            onChanged={endpoints.reload}
            onDeleted={() => onDeleted(endpoint)}
          />
        </>
      ) : null}
      <AddEndpoint
        api={api}
        onCreated={(created) => {
          choose(created.id);
          endpoints.reload();
        }}
      />
    </>
  );
}
