/**
 * A webhook endpoint's fields, for adding one and for changing one: URL, description, the event
 * types it receives (each, or "All events": `*`, which also takes types added later) and whether it
 * is enabled. The form sends what is typed: the API checks the URL and the types, and its refusal is
 * shown above the button.
 */
import { type FormEvent, useId, useState } from 'react';
import { webhookEventTypes } from '#shared/webhooks/event-types.ts';
import { Field, Outcome } from '../../ui/parts.tsx';
import type { Action } from '../../ui/useAction.ts';
import type { WebhookEndpoint } from './webhooks-wire.ts';

export interface EndpointFields {
  url: string;
  description: string | null;
  event_types: string[];
  enabled: boolean;
}

export function EndpointForm({
  label,
  submitLabel,
  endpoint,
  action,
  onSubmit,
}: {
  /** The form's accessible name. */
  label: string;
  submitLabel: string;
  /** The endpoint being changed; none for a new one. */
  endpoint?: WebhookEndpoint;
  action: Action;
  onSubmit(fields: EndpointFields): void;
}) {
  const [types, setTypes] = useState<ReadonlySet<string>>(() => new Set(endpoint?.event_types ?? []));
  const typesHint = useId();
  const enabledHint = useId();
  const all = types.has('*');
  const toggle = (type: string, on: boolean) =>
    setTypes((previous) => {
      const next = new Set(previous);
      if (on) next.add(type);
      else next.delete(type);
      return next;
    });

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const description = String(form.get('description') ?? '').trim();
    onSubmit({
      url: String(form.get('url') ?? '').trim(),
      description: description || null,
      // In the list's order; with "All events" only `*` (the API stores it alone anyway).
      event_types: all ? ['*'] : webhookEventTypes.filter((type) => types.has(type)),
      enabled: form.get('enabled') === 'on',
    });
  }

  return (
    <form onSubmit={submit} aria-label={label}>
      <div className="form-grid">
        <Field label="Endpoint URL" hint="https, on a public host, e.g. https://example.com/faucet-webhooks">
          {(id, hint) => (
            <input
              id={id}
              name="url"
              type="url"
              inputMode="url"
              autoComplete="off"
              spellCheck={false}
              defaultValue={endpoint?.url ?? ''}
              aria-describedby={hint}
            />
          )}
        </Field>
        <Field label="Description" hint="Optional, for you: what receives these events">
          {(id, hint) => <input id={id} name="description" defaultValue={endpoint?.description ?? ''} aria-describedby={hint} />}
        </Field>
      </div>
      <fieldset aria-describedby={typesHint}>
        <legend>Event types</legend>
        <p id={typesHint} className="muted">
          What this endpoint receives (docs/webhooks.md describes each event).
        </p>
        <label className="check">
          <input type="checkbox" checked={all} onChange={(event) => toggle('*', event.target.checked)} /> All events, including types added
          later
        </label>
        <div className="checks">
          {webhookEventTypes.map((type) => (
            <label className="check" key={type}>
              <input
                type="checkbox"
                checked={all || types.has(type)}
                disabled={all}
                onChange={(event) => toggle(type, event.target.checked)}
              />{' '}
              <code>{type}</code>
            </label>
          ))}
        </div>
      </fieldset>
      <div className="field">
        <label className="check">
          <input type="checkbox" name="enabled" defaultChecked={endpoint?.enabled ?? true} aria-describedby={enabledHint} /> Enabled
        </label>
        <small id={enabledHint} className="muted">
          Off: the endpoint is kept and receives nothing
        </small>
      </div>
      <Outcome error={action.error} done={action.done} />
      <button type="submit" disabled={action.busy}>
        {submitLabel}
      </button>
    </form>
  );
}
