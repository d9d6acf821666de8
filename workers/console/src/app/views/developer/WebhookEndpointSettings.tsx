/**
 * One webhook endpoint: what it is (URL, event types, enabled, the secret's hint and, during a
 * rotation, until when the previous secret still signs), a form to change it (PATCH), a rotation of
 * its signing secret with an overlap (the new secret shown once), and deleting it (after a confirm).
 */
import { type FormEvent, useId, useState } from 'react';
import type { ApiClient } from '../../api.ts';
import { Facts, Outcome, Section } from '../../ui/parts.tsx';
import { SecretOnce } from '../../ui/secret-once.tsx';
import { useAction } from '../../ui/useAction.ts';
import { EndpointForm, type EndpointFields } from './WebhookEndpointForm.tsx';
import {
  endpointPath,
  eventTypesText,
  overlapChoices,
  utcTime,
  type WebhookEndpoint,
  type WebhookEndpointWithSecret,
} from './webhooks-wire.ts';

function RotateSecret({ api, endpoint, onRotated }: { api: ApiClient; endpoint: WebhookEndpoint; onRotated(): void }) {
  const rotate = useAction();
  const [secret, setSecret] = useState<string | null>(null);
  const overlapHint = useId();
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const overlap = Number(new FormData(event.currentTarget).get('overlap_seconds'));
    setSecret(null);
    const ok = await rotate.run(async () => {
      const rotated = await api.post<WebhookEndpointWithSecret>(`${endpointPath(endpoint.id)}/rotate-secret`, { overlap_seconds: overlap });
      setSecret(rotated.secret);
    }, 'Signing secret rotated.');
    if (ok) onRotated();
  }
  return (
    <>
      <form onSubmit={submit} aria-label="Rotate the signing secret">
        <fieldset aria-describedby={overlapHint}>
          <legend>The previous secret keeps signing for</legend>
          <p id={overlapHint} className="muted">
            During the overlap each event carries two signatures, one per secret, so your receiver can switch without missing one.
          </p>
          {overlapChoices.map((choice) => (
            <label className="check" key={choice.seconds}>
              <input type="radio" name="overlap_seconds" value={choice.seconds} defaultChecked={choice.seconds === 86_400} /> {choice.label}
            </label>
          ))}
        </fieldset>
        <Outcome error={rotate.error} done={rotate.done} />
        <button type="submit" disabled={rotate.busy}>
          Rotate secret
        </button>
      </form>
      {secret ? <SecretOnce title="New signing secret" secret={secret} onDone={() => setSecret(null)} /> : null}
    </>
  );
}

export function WebhookEndpointSettings({
  api,
  endpoint,
  onChanged,
  onDeleted,
}: {
  api: ApiClient;
  endpoint: WebhookEndpoint;
  onChanged(): void;
  onDeleted(): void;
}) {
  const change = useAction();
  const remove = useAction();

  async function save(fields: EndpointFields) {
    if (await change.run(() => api.patch(endpointPath(endpoint.id), fields), 'Endpoint saved.')) onChanged();
  }
  async function deleteEndpoint() {
    if (!window.confirm(`Delete the endpoint ${endpoint.url}? Nothing more is sent to it, and its delivery log is no longer shown.`))
      return;
    if (await remove.run(() => api.delete(endpointPath(endpoint.id)), 'Endpoint deleted.')) onDeleted();
  }

  return (
    <Section title={`Endpoint ${endpoint.url}`}>
      <Facts
        label="Endpoint"
        rows={[
          ['URL', <code key="url">{endpoint.url}</code>],
          ['Description', endpoint.description ?? '—'],
          ['Event types', eventTypesText(endpoint.event_types)],
          ['Enabled', endpoint.enabled ? 'yes' : 'no: it receives nothing'],
          ['Signing secret', <code key="hint">{endpoint.secret_hint}</code>],
          ['Previous secret signs until', utcTime(endpoint.previous_secret_expires_at)],
          ['Created', utcTime(endpoint.created_at)],
        ]}
      />
      <h3>Change the endpoint</h3>
      <EndpointForm label="Change the endpoint" submitLabel="Save endpoint" endpoint={endpoint} action={change} onSubmit={save} />
      <h3>Rotate the signing secret</h3>
      <RotateSecret api={api} endpoint={endpoint} onRotated={onChanged} />
      <h3>Delete the endpoint</h3>
      <Outcome error={remove.error} done={remove.done} />
      <button type="button" className="danger" onClick={deleteEndpoint} disabled={remove.busy}>
        Delete endpoint
      </button>
    </Section>
  );
}
