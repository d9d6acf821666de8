/**
 * An app's trace export (docs/traces.md): the OTLP/HTTP endpoint each call goes to as one span, the
 * header names with their values masked, and how the last deliveries went (a failing export says how
 * and how many times in a row). The form replaces the whole export (PUT): saved header values are
 * never shown again, so every header is typed again; Remove stops the export (DELETE). The API's
 * refusal of either is shown above the form's buttons.
 */
import { type FormEvent, useEffect, useId, useRef, useState } from 'react';
import { type ApiClient, ApiError } from '../../api.ts';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Facts, Field, Loading, Outcome, Section } from '../../ui/parts.tsx';
import { type Action, useAction } from '../../ui/useAction.ts';
import type { App, TraceExport } from './types.ts';

interface HeaderRow {
  key: number;
  name: string;
  value: string;
}

const at = (instant: string | null) => (instant ? `${instant.slice(0, 19).replace('T', ' ')} UTC` : '—');
const stateText = { pending: 'pending: nothing sent since it was set', ok: 'ok: the last delivery succeeded', failing: 'failing' };

/** The stored header names in a stable order (the API's object keeps its database's order). */
const headerNames = (current: TraceExport | null) => Object.keys(current?.headers ?? {}).sort();

/** The app's export, or null when it has none (the API's 404 for the developer's own app). */
async function readExport(api: ApiClient, path: string): Promise<TraceExport | null> {
  try {
    return await api.get<TraceExport>(path);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/** The rows as the API's `headers`; a blank row is left out, a name typed twice is refused here (a JSON object keeps one). */
function headersOf(rows: HeaderRow[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const row of rows) {
    const name = row.name.trim();
    if (!name && !row.value) continue;
    if (name in headers) throw new Error(`The header ${name} is named twice.`);
    headers[name] = row.value;
  }
  return headers;
}

function CurrentExport({ current }: { current: TraceExport }) {
  const { delivery } = current;
  const names = headerNames(current);
  return (
    <>
      <Facts
        label="Current trace export"
        rows={[
          ['Endpoint', <code key="endpoint">{current.endpoint}</code>],
          [
            'Headers',
            names.length ? (
              <ul className="plain" key="headers">
                {names.map((name) => (
                  <li key={name}>
                    <code>
                      {name}: {current.headers[name]}
                    </code>
                  </li>
                ))}
              </ul>
            ) : (
              'none'
            ),
          ],
          ['Enabled', current.enabled ? 'yes' : 'no: nothing is sent'],
          ['Set at', at(current.updated_at)],
        ]}
      />
      <h3>Delivery</h3>
      {delivery.state === 'failing' ? (
        <p className="error">
          Deliveries are failing: {delivery.consecutive_failures} in a row. Last error ({at(delivery.last_error_at)}):{' '}
          {delivery.last_error ?? 'not told'}
        </p>
      ) : null}
      <Facts
        label="Delivery"
        rows={[
          ['State', stateText[delivery.state]],
          ['Consecutive failures', String(delivery.consecutive_failures)],
          ['Last error', delivery.last_error ?? '—'],
          ['Last error at', at(delivery.last_error_at)],
          ['Last success at', at(delivery.last_success_at)],
        ]}
      />
    </>
  );
}

function ExportForm({
  api,
  path,
  current,
  change,
  onChanged,
  onRemove,
}: {
  api: ApiClient;
  path: string;
  current: TraceExport | null;
  /** Saving and removing share one outcome line, right above the buttons. */
  change: Action;
  onChanged(): void;
  onRemove(): void;
}) {
  // The current names come back with empty values: a save without them would drop them silently.
  const [rows, setRows] = useState<HeaderRow[]>(() => headerNames(current).map((name, index) => ({ key: index, name, value: '' })));
  const nextKey = useRef(rows.length);
  const [focusRow, setFocusRow] = useState<number | null>(null);
  const addButton = useRef<HTMLButtonElement>(null);
  const list = useRef<HTMLDivElement>(null);
  const enabledHint = useId();
  // Keyboard: a new row's name takes focus; after a removal, focus goes to "Add header".
  useEffect(() => {
    if (focusRow === null) return;
    const input = list.current?.querySelector<HTMLInputElement>(`[data-row="${focusRow}"]`);
    (input ?? addButton.current)?.focus();
    setFocusRow(null);
  }, [focusRow]);

  const edit = (key: number, field: 'name' | 'value', value: string) =>
    setRows((previous) => previous.map((row) => (row.key === key ? { ...row, [field]: value } : row)));
  function add() {
    const key = nextKey.current++;
    setRows((previous) => [...previous, { key, name: '', value: '' }]);
    setFocusRow(key);
  }
  function remove(key: number) {
    setRows((previous) => previous.filter((row) => row.key !== key));
    setFocusRow(-1);
  }
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const endpoint = String(form.get('endpoint') ?? '').trim();
    const enabled = form.get('enabled') === 'on';
    if (await change.run(() => api.put(path, { endpoint, headers: headersOf(rows), enabled }), 'Trace export saved.')) onChanged();
  }

  return (
    <form onSubmit={submit} aria-label="Set trace export">
      <Field label="Endpoint URL" hint="The full OTLP/HTTP traces URL, e.g. https://api.honeycomb.io/v1/traces">
        {(id, hint) => (
          <input
            id={id}
            name="endpoint"
            type="url"
            inputMode="url"
            autoComplete="off"
            spellCheck={false}
            defaultValue={current?.endpoint ?? ''}
            aria-describedby={hint}
          />
        )}
      </Field>
      <fieldset>
        <legend>Headers</legend>
        <p className="muted">
          Sent with every export, typically your tracing backend's API key. Stored encrypted and shown masked: saving replaces them all, so
          type each value again.
        </p>
        <div ref={list}>
          {rows.map((row, index) => (
            <div className="header-row" key={row.key}>
              <Field label={`Header ${index + 1} name`}>
                {(id) => (
                  <input
                    id={id}
                    data-row={row.key}
                    value={row.name}
                    onChange={(event) => edit(row.key, 'name', event.target.value)}
                    autoComplete="off"
                    spellCheck={false}
                  />
                )}
              </Field>
              <Field label={`Header ${index + 1} value`}>
                {(id) => (
                  <input
                    id={id}
                    type="password"
                    value={row.value}
                    onChange={(event) => edit(row.key, 'value', event.target.value)}
                    autoComplete="off"
                  />
                )}
              </Field>
              <button type="button" className="ghost" onClick={() => remove(row.key)}>
                Remove<span className="sr-only"> header {index + 1}</span>
              </button>
            </div>
          ))}
        </div>
        <button type="button" className="ghost" ref={addButton} onClick={add}>
          Add header
        </button>
      </fieldset>
      <div className="field">
        <label className="check">
          <input type="checkbox" name="enabled" defaultChecked={current?.enabled ?? true} aria-describedby={enabledHint} /> Enabled
        </label>
        <small id={enabledHint} className="muted">
          Off: the export is kept and nothing is sent
        </small>
      </div>
      <Outcome error={change.error} done={change.done} />
      <div className="actions">
        <button type="submit" disabled={change.busy}>
          {current ? 'Replace export' : 'Send traces'}
        </button>
        {current ? (
          <button type="button" className="danger" onClick={onRemove} disabled={change.busy}>
            Remove export
          </button>
        ) : null}
      </div>
    </form>
  );
}

export function AppTraces({ api, app }: { api: ApiClient; app: App }) {
  const path = `/v1/developer/apps/${encodeURIComponent(app.public_app_id)}/traces`;
  const traces = useLoad(() => readExport(api, path), [api, path]);
  const change = useAction();
  const current = traces.data ?? null;

  async function removeExport() {
    if (!window.confirm(`Stop sending traces of ${app.name}? The export and its headers are deleted.`)) return;
    if (await change.run(() => api.delete(path), 'Trace export removed.')) traces.reload();
  }

  return (
    <Section
      title={`Traces of ${app.name}`}
      actions={
        <button type="button" className="ghost" onClick={traces.reload} disabled={traces.loading}>
          Refresh<span className="sr-only"> traces</span>
        </button>
      }
    >
      <p className="muted">
        Each call of this app as one OpenTelemetry span sent to your OTLP/HTTP endpoint: model, outcome, timings, tokens and charge, never
        the prompt or the answer.
      </p>
      <ErrorLine error={traces.error} />
      {traces.data === undefined ? (
        traces.loading ? (
          <Loading what="trace export" />
        ) : null
      ) : (
        <>
          {current ? <CurrentExport current={current} /> : <p className="muted">This app sends no traces.</p>}
          <h3>{current ? 'Replace the export' : 'Send traces'}</h3>
          {/* A new key after each save or removal: the typed header values are gone from the page. */}
          <ExportForm
            key={current?.updated_at ?? 'none'}
            api={api}
            path={path}
            current={current}
            change={change}
            onChanged={traces.reload}
            onRemove={removeExport}
          />
        </>
      )}
    </Section>
  );
}
