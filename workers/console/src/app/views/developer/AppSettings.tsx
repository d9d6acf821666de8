/**
 * One app's settings: name, default feature and per-end-user limits (PATCH), who may mint sessions
 * (session policy, JWKS URL), the web origins allowed to call from a browser, a new signing secret
 * (shown once), and archiving.
 */
import { type FormEvent, useState } from 'react';
import type { ApiClient } from '../../api.ts';
import { intField, listField, usdField } from '../../ui/forms.ts';
import { Field, Outcome } from '../../ui/parts.tsx';
import { useAction } from '../../ui/useAction.ts';
import type { App, Feature } from './types.ts';

const text = (form: FormData, name: string) => String(form.get(name) ?? '');

export function AppSettings({ api, app, features, onSaved }: { api: ApiClient; app: App; features: Feature[]; onSaved(): void }) {
  const path = `/v1/developer/apps/${encodeURIComponent(app.public_app_id)}`;
  const settings = useAction();
  const identity = useAction();
  const origins = useAction();
  const secret = useAction();
  const archive = useAction();
  const [signingSecret, setSigningSecret] = useState<string | null>(null);

  async function saveSettings(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const defaultFeature = text(form, 'default_feature_key');
    const body = {
      name: text(form, 'name'),
      ...(defaultFeature ? { default_feature_key: defaultFeature } : {}),
      limits: {
        spend_per_day_usd: usdField(text(form, 'spend_per_day_usd')),
        spend_per_month_usd: usdField(text(form, 'spend_per_month_usd')),
        requests_per_minute: intField(text(form, 'requests_per_minute')),
      },
    };
    if (await settings.run(() => api.patch(path, body), 'App saved.')) onSaved();
  }
  async function savePolicy(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const jwks = text(form, 'jwks_url').trim();
    const body = { session_policy: text(form, 'session_policy'), jwks_url: jwks || null };
    if (await identity.run(() => api.patch(`${path}/session-policy`, body), 'Session policy saved.')) onSaved();
  }
  async function saveOrigins(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    if (
      await origins.run(
        () => api.put(`${path}/allowed-origins`, { allowed_origins: listField(text(form, 'allowed_origins')) }),
        'Origins saved.',
      )
    )
      onSaved();
  }
  async function newSecret() {
    setSigningSecret(null);
    await secret.run(async () => {
      const created = await api.post<{ signing_secret: string }>(`${path}/signing-secrets`, {});
      setSigningSecret(created.signing_secret);
    }, 'Signing secret created.');
  }
  async function archiveApp() {
    if (!window.confirm(`Archive ${app.name}? It will refuse new sessions, calls and changes.`)) return;
    if (await archive.run(() => api.post(`${path}/archive`), 'App archived.')) onSaved();
  }

  const live = features.filter((feature) => !feature.archived_at);
  return (
    <>
      <form onSubmit={saveSettings} aria-label={`Settings of ${app.name}`} key={`settings-${JSON.stringify(app)}`}>
        <div className="form-grid">
          <Field label="App name">{(id) => <input id={id} name="name" defaultValue={app.name} />}</Field>
          <Field label="Default feature" hint="What a call without `feature` uses">
            {(id, hint) => (
              <select id={id} name="default_feature_key" defaultValue={app.default_feature_key ?? ''} aria-describedby={hint}>
                <option value="">{app.default_feature_key ? '(keep)' : '(none yet)'}</option>
                {live.map((feature) => (
                  <option key={feature.feature_key} value={feature.feature_key}>
                    {feature.feature_key}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Spend per end user per day (USD)" hint="Empty = no limit">
            {(id, hint) => (
              <input
                id={id}
                name="spend_per_day_usd"
                inputMode="decimal"
                defaultValue={app.limits.spend_per_day_usd ?? ''}
                aria-describedby={hint}
              />
            )}
          </Field>
          <Field label="Spend per end user per month (USD)" hint="Empty = no limit">
            {(id, hint) => (
              <input
                id={id}
                name="spend_per_month_usd"
                inputMode="decimal"
                defaultValue={app.limits.spend_per_month_usd ?? ''}
                aria-describedby={hint}
              />
            )}
          </Field>
          <Field label="Requests per minute per end user" hint="Empty = no limit">
            {(id, hint) => (
              <input
                id={id}
                name="requests_per_minute"
                inputMode="numeric"
                defaultValue={app.limits.requests_per_minute ?? ''}
                aria-describedby={hint}
              />
            )}
          </Field>
        </div>
        <Outcome error={settings.error} done={settings.done} />
        <button type="submit" disabled={settings.busy}>
          Save app
        </button>
      </form>

      <h3>Sessions and origins</h3>
      <div className="form-grid">
        <form onSubmit={savePolicy} aria-label="Session policy" key={`policy-${app.session_policy}`}>
          <Field
            label="Session policy"
            hint="server: your backend with a developer key; signed: a user token you sign; anonymous: a device id"
          >
            {(id, hint) => (
              <select id={id} name="session_policy" defaultValue={app.session_policy} aria-describedby={hint}>
                <option value="server">server</option>
                <option value="signed">signed</option>
                <option value="anonymous">anonymous</option>
              </select>
            )}
          </Field>
          <Field label="JWKS URL" hint="signed apps only; empty = signing secrets">
            {(id, hint) => <input id={id} name="jwks_url" type="url" aria-describedby={hint} />}
          </Field>
          <Outcome error={identity.error} done={identity.done} />
          <button type="submit" disabled={identity.busy}>
            Save policy
          </button>
        </form>
        <form onSubmit={saveOrigins} aria-label="Allowed origins" key={`origins-${app.allowed_origins.join(',')}`}>
          <Field label="Allowed web origins" hint="One per line, e.g. https://app.example.com">
            {(id, hint) => (
              <textarea id={id} name="allowed_origins" rows={3} defaultValue={app.allowed_origins.join('\n')} aria-describedby={hint} />
            )}
          </Field>
          <Outcome error={origins.error} done={origins.done} />
          <button type="submit" disabled={origins.busy}>
            Save origins
          </button>
        </form>
      </div>
      <div className="actions">
        <button type="button" className="ghost" onClick={newSecret} disabled={secret.busy}>
          New signing secret
        </button>
        <button type="button" className="danger" onClick={archiveApp} disabled={archive.busy || Boolean(app.archived_at)}>
          {app.archived_at ? 'Archived' : 'Archive app'}
        </button>
      </div>
      <Outcome error={secret.error ?? archive.error} done={secret.done || archive.done} />
      {signingSecret ? (
        <p>
          Copy it now, it is not shown again: <code className="secret">{signingSecret}</code>
        </p>
      ) : null}
    </>
  );
}
