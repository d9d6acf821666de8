/**
 * Keys: developer keys (create — the key is shown once —, list, revoke) and provider keys (masked,
 * with their monthly budget and this month's spend; add one, disable one).
 */
import { type FormEvent, useState } from 'react';
import { useApi } from '../../session.tsx';
import { usdField } from '../../ui/forms.ts';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Field, Loading, Outcome, Section, usd } from '../../ui/parts.tsx';
import { useAction } from '../../ui/useAction.ts';
import { ScrollTable } from '../../ui/scroll-table.tsx';

interface DeveloperKey {
  id: string;
  prefix: string;
  label: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

interface ProviderKey {
  id: string;
  provider: string;
  label: string | null;
  status: 'active' | 'disabled';
  masked_key: string;
  /** The API root the key is used at (azure, custom); null: the provider's own. */
  base_url: string | null;
  monthly_budget_usd: string;
  spent_this_month_usd: string;
  created_at: string;
}

const day = (iso: string | null) => (iso ? iso.slice(0, 16).replace('T', ' ') : '—');

function DeveloperKeys() {
  const api = useApi();
  const keys = useLoad(() => api.get<{ data: DeveloperKey[] }>('/v1/developer/keys'), [api]);
  const create = useAction();
  const revoke = useAction();
  const [shown, setShown] = useState<string | null>(null);
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const element = event.currentTarget;
    const label = String(new FormData(element).get('label') ?? '').trim();
    setShown(null);
    const ok = await create.run(async () => {
      const created = await api.post<{ api_key: string }>('/v1/developer/keys', label ? { label } : {});
      setShown(created.api_key);
    }, 'Key created.');
    if (ok) {
      element.reset();
      keys.reload();
    }
  }
  return (
    <Section title="Developer keys">
      <ErrorLine error={keys.error} />
      {keys.data ? (
        <ScrollTable label="Developer keys">
          <table aria-label="Developer keys">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Label</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.data.data.map((key) => (
                <tr key={key.id}>
                  <th scope="row">
                    <code>{key.prefix}…</code>
                  </th>
                  <td>{key.label ?? '—'}</td>
                  <td>{day(key.created_at)}</td>
                  <td>{day(key.last_used_at)}</td>
                  <td>{key.revoked_at ? `revoked ${day(key.revoked_at)}` : 'live'}</td>
                  <td>
                    <button
                      type="button"
                      className="danger"
                      disabled={revoke.busy || Boolean(key.revoked_at)}
                      onClick={async () => {
                        if (
                          window.confirm(`Revoke key ${key.prefix}…? Calls with it fail from now on.`) &&
                          (await revoke.run(() => api.post(`/v1/developer/keys/${key.id}/revoke`), 'Key revoked.'))
                        )
                          keys.reload();
                      }}
                    >
                      Revoke<span className="sr-only"> {key.prefix}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      ) : keys.loading ? (
        <Loading what="keys" />
      ) : null}
      <Outcome error={revoke.error} done={revoke.done} />
      <form onSubmit={submit} aria-label="New developer key" className="actions">
        <Field label="Label of a new key">{(id) => <input id={id} name="label" />}</Field>
        <button type="submit" disabled={create.busy}>
          Create key
        </button>
      </form>
      <Outcome error={create.error} done={create.done} />
      {shown ? (
        <div role="note">
          <p>Copy this key now: it is not shown again.</p>
          <code className="secret" data-testid="new-developer-key">
            {shown}
          </code>{' '}
          <button type="button" className="ghost" onClick={() => setShown(null)}>
            I copied it
          </button>
        </div>
      ) : null}
    </Section>
  );
}

function ProviderKeys() {
  const api = useApi();
  const keys = useLoad(() => api.get<{ data: ProviderKey[] }>('/v1/developer/provider-keys'), [api]);
  const add = useAction();
  const disable = useAction();
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const element = event.currentTarget;
    const form = new FormData(element);
    const value = (name: string) => String(form.get(name) ?? '').trim();
    const body = {
      provider: value('provider'),
      api_key: value('api_key'),
      monthly_budget_usd: usdField(value('monthly_budget_usd')),
      ...(value('label') ? { label: value('label') } : {}),
      ...(value('base_url') ? { base_url: value('base_url') } : {}),
    };
    if (await add.run(() => api.post('/v1/developer/provider-keys', body), 'Provider key stored.')) {
      element.reset();
      keys.reload();
    }
  }
  return (
    <Section title="Provider keys">
      <ErrorLine error={keys.error} />
      {keys.data ? (
        keys.data.data.length ? (
          <ScrollTable label="Provider keys">
            <table aria-label="Provider keys">
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Provider</th>
                  <th scope="col">Label</th>
                  <th scope="col">Endpoint</th>
                  <th scope="col" className="num">
                    Spent this month
                  </th>
                  <th scope="col" className="num">
                    Monthly budget
                  </th>
                  <th scope="col">State</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {keys.data.data.map((key) => (
                  <tr key={key.id}>
                    <th scope="row">
                      <code>{key.masked_key}</code>
                    </th>
                    <td>{key.provider}</td>
                    <td>{key.label ?? '—'}</td>
                    <td>{key.base_url ?? "provider's own"}</td>
                    <td className="num">{usd(key.spent_this_month_usd)}</td>
                    <td className="num">{usd(key.monthly_budget_usd)}</td>
                    <td>{key.status}</td>
                    <td>
                      <button
                        type="button"
                        className="danger"
                        disabled={disable.busy || key.status === 'disabled'}
                        onClick={async () => {
                          if (
                            window.confirm(`Disable ${key.masked_key}? It is never used again.`) &&
                            (await disable.run(() => api.delete(`/v1/developer/provider-keys/${key.id}`), 'Key disabled.'))
                          )
                            keys.reload();
                        }}
                      >
                        Disable<span className="sr-only"> {key.masked_key}</span>
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollTable>
        ) : (
          <p className="muted">No provider keys: your apps' calls use the platform pool.</p>
        )
      ) : keys.loading ? (
        <Loading what="provider keys" />
      ) : null}
      <Outcome error={disable.error} done={disable.done} />
      <h3>Add a provider key</h3>
      <form onSubmit={submit} aria-label="New provider key">
        <div className="form-grid">
          <Field label="Provider" hint="e.g. openai, anthropic">
            {(id, hint) => <input id={id} name="provider" list="key-providers" aria-describedby={hint} />}
          </Field>
          <datalist id="key-providers">
            <option value="openai" />
            <option value="anthropic" />
            <option value="azure" />
            <option value="custom" />
          </datalist>
          <Field label="API key" hint="Stored encrypted; shown masked from now on">
            {(id, hint) => <input id={id} name="api_key" type="password" autoComplete="off" aria-describedby={hint} />}
          </Field>
          <Field label="Monthly budget (USD)">{(id) => <input id={id} name="monthly_budget_usd" inputMode="decimal" />}</Field>
          <Field label="Label">{(id) => <input id={id} name="label" />}</Field>
          <Field label="Base URL" hint="azure and custom providers only">
            {(id, hint) => <input id={id} name="base_url" type="url" aria-describedby={hint} />}
          </Field>
        </div>
        <Outcome error={add.error} done={add.done} />
        <button type="submit" disabled={add.busy}>
          Add key
        </button>
      </form>
    </Section>
  );
}

export function Keys() {
  return (
    <>
      <h1>Keys</h1>
      <DeveloperKeys />
      <ProviderKeys />
    </>
  );
}
