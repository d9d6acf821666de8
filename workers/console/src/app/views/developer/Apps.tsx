/**
 * Apps and features: the developer's apps (create one with its limits), and for the chosen app its
 * settings (AppSettings), its low-balance alert (AppAlerts), its features (list, create, edit,
 * archive — FeatureForm) and its trace export (AppTraces).
 */
import { type FormEvent, useState } from 'react';
import type { ApiClient } from '../../api.ts';
import { useApi } from '../../session.tsx';
import { intField, usdField } from '../../ui/forms.ts';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Field, Loading, Outcome, Section, usd } from '../../ui/parts.tsx';
import { useAction } from '../../ui/useAction.ts';
import { AppAlerts } from './AppAlerts.tsx';
import { AppSettings } from './AppSettings.tsx';
import { AppTraces } from './AppTraces.tsx';
import { FeatureForm } from './FeatureForm.tsx';
import type { App, Feature, Page } from './types.ts';
import { ScrollTable } from '../../ui/scroll-table.tsx';

/** Every page of a keyset-paged list (the console shows whole lists; a developer has few apps). */
async function allPages<T>(api: ApiClient, path: string): Promise<T[]> {
  const rows: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await api.get<Page<T>>(path, { limit: 100, cursor });
    rows.push(...page.data);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return rows;
}

function CreateApp({ api, onCreated }: { api: ApiClient; onCreated(app: App): void }) {
  const action = useAction();
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const element = event.currentTarget;
    const form = new FormData(element);
    const value = (name: string) => String(form.get(name) ?? '');
    const limits = {
      spend_per_day_usd: usdField(value('spend_per_day_usd')),
      spend_per_month_usd: usdField(value('spend_per_month_usd')),
      requests_per_minute: intField(value('requests_per_minute')),
    };
    let created: App | undefined;
    const ok = await action.run(async () => {
      created = await api.post<App>('/v1/developer/apps', { name: value('name'), limits });
    }, 'App created.');
    if (ok && created) {
      element.reset();
      onCreated(created);
    }
  }
  return (
    <form onSubmit={submit} aria-label="New app">
      <div className="form-grid">
        <Field label="New app name">{(id) => <input id={id} name="name" />}</Field>
        <Field label="Spend per end user per day (USD)" hint="Empty = no limit">
          {(id, hint) => <input id={id} name="spend_per_day_usd" inputMode="decimal" aria-describedby={hint} />}
        </Field>
        <Field label="Spend per end user per month (USD)" hint="Empty = no limit">
          {(id, hint) => <input id={id} name="spend_per_month_usd" inputMode="decimal" aria-describedby={hint} />}
        </Field>
        <Field label="Requests per minute per end user" hint="Empty = no limit">
          {(id, hint) => <input id={id} name="requests_per_minute" inputMode="numeric" aria-describedby={hint} />}
        </Field>
      </div>
      <Outcome error={action.error} done={action.done} />
      <button type="submit" disabled={action.busy}>
        Create app
      </button>
    </form>
  );
}

function Features({ api, app, features, onChanged }: { api: ApiClient; app: App; features: Feature[]; onChanged(): void }) {
  const [editing, setEditing] = useState<string | null>(null);
  const archive = useAction();
  const featurePath = (key: string) => `/v1/developer/apps/${encodeURIComponent(app.public_app_id)}/features/${encodeURIComponent(key)}`;
  const edited = features.find((feature) => feature.feature_key === editing);
  return (
    <>
      {features.length === 0 ? (
        <p className="muted">No features yet: calls need one (the first becomes the app's default).</p>
      ) : (
        <ScrollTable label={`Features of ${app.name}`}>
          <table aria-label={`Features of ${app.name}`}>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Default model</th>
                <th scope="col">Route policy</th>
                <th scope="col" className="num">
                  Price / Mtok
                </th>
                <th scope="col" className="num">
                  Open fee
                </th>
                <th scope="col">Fallbacks</th>
                <th scope="col">State</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {features.map((feature) => (
                <tr key={feature.feature_key}>
                  <th scope="row">
                    {feature.feature_key}
                    {feature.is_default ? ' (default)' : ''}
                  </th>
                  <td>{feature.default_model}</td>
                  <td>{feature.route_policy}</td>
                  <td className="num">
                    {feature.developer_price_per_mtok_usd ? usd(feature.developer_price_per_mtok_usd) : 'upstream cost'}
                  </td>
                  <td className="num">{usd(feature.open_fee_usd)}</td>
                  <td>{feature.fallback_models.join(', ') || '—'}</td>
                  <td>{feature.archived_at ? 'archived' : 'live'}</td>
                  <td className="actions">
                    <button
                      type="button"
                      className="ghost"
                      onClick={() => setEditing(feature.feature_key)}
                      disabled={Boolean(feature.archived_at)}
                    >
                      Edit<span className="sr-only"> {feature.feature_key}</span>
                    </button>
                    <button
                      type="button"
                      className="danger"
                      disabled={archive.busy || Boolean(feature.archived_at)}
                      onClick={async () => {
                        if (
                          window.confirm(`Archive feature ${feature.feature_key}?`) &&
                          (await archive.run(() => api.post(`${featurePath(feature.feature_key)}/archive`), 'Feature archived.'))
                        )
                          onChanged();
                      }}
                    >
                      Archive<span className="sr-only"> {feature.feature_key}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      )}
      <Outcome error={archive.error} done={archive.done} />
      {edited ? (
        <>
          <h3>Edit feature {edited.feature_key}</h3>
          <FeatureForm key={edited.feature_key} api={api} appId={app.public_app_id} feature={edited} onSaved={onChanged} />
        </>
      ) : null}
      <h3>New feature</h3>
      <FeatureForm api={api} appId={app.public_app_id} onSaved={onChanged} />
    </>
  );
}

export function Apps() {
  const api = useApi();
  const apps = useLoad(() => allPages<App>(api, '/v1/developer/apps'), [api]);
  const [chosen, setChosen] = useState<string | null>(null);
  const app = apps.data?.find((one) => one.public_app_id === chosen) ?? apps.data?.find((one) => !one.archived_at) ?? apps.data?.[0];
  const features = useLoad(
    () => (app ? allPages<Feature>(api, `/v1/developer/apps/${encodeURIComponent(app.public_app_id)}/features`) : Promise.resolve([])),
    [api, app?.public_app_id],
  );
  const reloadAll = () => {
    apps.reload();
    features.reload();
  };
  return (
    <>
      <h1>Apps and features</h1>
      <Section title="Your apps">
        <ErrorLine error={apps.error} />
        {apps.data ? (
          apps.data.length ? (
            <ScrollTable label="Apps">
              <table aria-label="Apps">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">public_app_id</th>
                    <th scope="col">Session policy</th>
                    <th scope="col">Default feature</th>
                    <th scope="col">State</th>
                    <th scope="col">Open</th>
                  </tr>
                </thead>
                <tbody>
                  {apps.data.map((one) => (
                    <tr key={one.public_app_id} aria-current={one === app ? 'true' : undefined}>
                      <th scope="row">{one.name}</th>
                      <td>
                        <code>{one.public_app_id}</code>
                      </td>
                      <td>{one.session_policy}</td>
                      <td>{one.default_feature_key ?? '—'}</td>
                      <td>{one.archived_at ? 'archived' : 'live'}</td>
                      <td>
                        <button type="button" className="ghost" onClick={() => setChosen(one.public_app_id)} aria-pressed={one === app}>
                          Manage<span className="sr-only"> {one.name}</span>
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollTable>
          ) : (
            <p className="muted">No apps yet.</p>
          )
        ) : apps.loading ? (
          <Loading what="apps" />
        ) : null}
        <h3>Create an app</h3>
        <CreateApp
          api={api}
          onCreated={(created) => {
            setChosen(created.public_app_id);
            apps.reload();
          }}
        />
      </Section>
      {app ? (
        <>
          <Section title={`App: ${app.name}`}>
            <AppSettings api={api} app={app} features={features.data ?? []} onSaved={reloadAll} />
            <AppAlerts key={app.public_app_id} api={api} app={app} />
            <h3>Features</h3>
            <ErrorLine error={features.error} />
            {features.data ? <Features api={api} app={app} features={features.data} onChanged={reloadAll} /> : <Loading what="features" />}
          </Section>
          <AppTraces key={app.public_app_id} api={api} app={app} />
        </>
      ) : null}
    </>
  );
}
