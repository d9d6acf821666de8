/**
 * Calls: the request log (docs/request-log.md). The filters of `GET /v1/developer/calls`, newest
 * first with keyset "More calls", each call opened in a panel beside the list; errors and latency
 * (p50, p95) per day for the last 30 days in the browser's time zone, each chart with its table. The
 * End users view links here with `?user_ref=…` (an opaque ref, never a raw id).
 */
import { type FormEvent, useEffect, useMemo, useRef, useState } from 'react';
import { routeQuery } from '../../router.ts';
import { useApi } from '../../session.tsx';
import { useKeysetPages } from '../../ui/keyset-pages.ts';
import { type FigureSeries, ChartFigure } from '../../ui/chart-figure.tsx';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Field, Loading, Section, usd } from '../../ui/parts.tsx';
import { ScrollTable } from '../../ui/scroll-table.tsx';
import { CallDetailPanel } from './CallDetailPanel.tsx';
import { type CallFilters, type CallStats, type CallStatsDay, type CallSummary, filtersFrom, instantOf, localOf } from './calls-wire.ts';
import type { App, Page } from './types.ts';
import { localDay } from './usage.ts';

const outcomes = ['answered', 'cut', 'upstream_error', 'refused', 'estimated'];
const routes = ['platform', 'developer_key', 'byok'];
const surfaces = ['chat.completions', 'responses', 'messages', 'embeddings'];
const browserTimeZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
const count = (value: number) => value.toLocaleString('en-US');
const countTick = (value: number) => (Number.isInteger(value) ? count(value) : '');
const ms = (value: number | null) => (value === null ? '—' : `${value.toLocaleString('en-US')} ms`);
const tokens = (call: CallSummary) =>
  call.input_tokens === null ? '—' : `${count(call.input_tokens)} in / ${count(call.output_tokens ?? 0)} out`;

function Select({ label, name, value, options }: { label: string; name: string; value: string | undefined; options: string[][] }) {
  return (
    <Field label={label}>
      {(id) => (
        <select id={id} name={name} defaultValue={value ?? ''}>
          <option value="">Any</option>
          {options.map(([option, text]) => (
            <option key={option} value={option}>
              {text ?? option}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

function Text({ label, name, value, hint }: { label: string; name: string; value: string | undefined; hint?: string }) {
  return (
    <Field label={label} {...(hint ? { hint } : {})}>
      {(id, describedBy) => (
        <input id={id} name={name} defaultValue={value ?? ''} autoComplete="off" spellCheck={false} aria-describedby={describedBy} />
      )}
    </Field>
  );
}

function FilterForm({
  filters,
  apps,
  onApply,
  onClear,
  focusFirst,
}: {
  filters: CallFilters;
  apps: App[];
  onApply(filters: CallFilters): void;
  onClear(): void;
  /** After Clear the form is new: focus goes to its first field, not to the page. */
  focusFirst: boolean;
}) {
  const form = useRef<HTMLFormElement>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: once, when this form replaces a cleared one.
  useEffect(() => {
    if (focusFirst) form.current?.querySelector<HTMLElement>('select, input')?.focus();
  }, []);
  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const next: CallFilters = {};
    for (const [name, raw] of form.entries()) {
      const value = String(raw).trim();
      if (!value) continue;
      next[name as keyof CallFilters] = name === 'from' || name === 'to' ? instantOf(value) : value;
    }
    onApply(next);
  }
  return (
    <form ref={form} onSubmit={submit} aria-label="Filter calls">
      <div className="form-grid">
        <Select
          label="App"
          name="app"
          value={filters.app}
          options={apps.map((app) => [app.public_app_id, `${app.name} (${app.public_app_id})`])}
        />
        <Text label="Feature" name="feature" value={filters.feature} />
        <Text label="End user (user_ref)" name="user_ref" value={filters.user_ref} />
        <Text label="Model" name="model" value={filters.model} hint="Asked for or answered, e.g. openai:gpt-4o-mini" />
        <Text label="Provider" name="provider" value={filters.provider} />
        <Select label="Route" name="route" value={filters.route} options={routes.map((one) => [one])} />
        <Select label="Outcome" name="outcome" value={filters.outcome} options={outcomes.map((one) => [one])} />
        <Select label="Surface" name="surface" value={filters.surface} options={surfaces.map((one) => [one])} />
        <Field label="From (your time)">
          {(id) => <input id={id} name="from" type="datetime-local" defaultValue={localOf(filters.from)} />}
        </Field>
        <Field label="To (your time)">{(id) => <input id={id} name="to" type="datetime-local" defaultValue={localOf(filters.to)} />}</Field>
        <Text label="Request id" name="request_id" value={filters.request_id} hint="The client's x-request-id" />
      </div>
      <div className="actions">
        <button type="submit">Apply filters</button>
        <button type="button" className="ghost" onClick={onClear}>
          Clear filters
        </button>
      </div>
    </form>
  );
}

const errorSeries: Array<FigureSeries<CallStatsDay>> = [
  { label: 'Errors', color: '--series-1', value: (day) => day.errors, shown: (day) => count(day.errors) },
  { label: 'Calls', color: '--series-2', value: (day) => day.calls, shown: (day) => count(day.calls) },
];
const errorColumns = [
  ...errorSeries,
  { label: 'Upstream errors', shown: (day: CallStatsDay) => count(day.upstream_errors) },
  { label: 'Refused', shown: (day: CallStatsDay) => count(day.refused) },
  { label: 'Cut', shown: (day: CallStatsDay) => count(day.cut) },
];
const latencySeries: Array<FigureSeries<CallStatsDay>> = [
  { label: 'p50', color: '--series-1', value: (day) => day.p50_ms, shown: (day) => ms(day.p50_ms) },
  { label: 'p95', color: '--series-2', value: (day) => day.p95_ms, shown: (day) => ms(day.p95_ms) },
];

function Charts({ app }: { app: string | undefined }) {
  const api = useApi();
  const timeZone = useMemo(browserTimeZone, []);
  const stats = useLoad(
    () => api.get<CallStats>('/v1/developer/calls/stats', { from: localDay(timeZone, -29), to: localDay(timeZone), tz: timeZone, app }),
    [api, timeZone, app],
  );
  const caption = (what: string) => (stats.data ? `${what} per day, ${stats.data.from} to ${stats.data.to} (${stats.data.tz})` : what);
  return (
    <>
      <ErrorLine error={stats.error} />
      {stats.data ? (
        <div className="grid">
          <Section title="Errors">
            <ChartFigure
              title="Errors"
              caption={caption('Errors')}
              rows={stats.data.data}
              series={errorSeries}
              columns={errorColumns}
              format={countTick}
            />
          </Section>
          <Section title="Latency">
            <ChartFigure
              title="Latency"
              caption={caption('Latency p50 and p95')}
              rows={stats.data.data}
              series={latencySeries}
              format={(value) => `${Math.round(value)} ms`}
            />
          </Section>
        </div>
      ) : stats.loading ? (
        <Loading what="daily figures" />
      ) : null}
    </>
  );
}

export function Calls() {
  const api = useApi();
  const apps = useLoad(() => api.get<Page<App>>('/v1/developer/apps', { limit: 100 }), [api]);
  const [filters, setFilters] = useState<CallFilters>(() => filtersFrom(routeQuery()));
  const first = useLoad(() => api.get<Page<CallSummary>>('/v1/developer/calls', { ...filters, limit: 50 }), [api, filters]);
  const pages = useKeysetPages(first.data, (cursor) =>
    api.get<Page<CallSummary>>('/v1/developer/calls', { ...filters, limit: 50, cursor }),
  );
  const { rows, cursor } = pages;
  const [open, setOpen] = useState<string | null>(null);
  const [cleared, setCleared] = useState(0);

  function apply(next: CallFilters) {
    setFilters(next);
    pages.reset();
    setOpen(null);
  }
  function close() {
    const id = open;
    setOpen(null);
    // Focus goes back to the row the panel was opened from.
    if (id) requestAnimationFrame(() => document.querySelector<HTMLButtonElement>(`[data-call="${id}"]`)?.focus());
  }

  return (
    <>
      <h1>Calls</h1>
      <p className="muted">Every call of your apps as the gateway saw it: no prompt or answer is kept.</p>
      <Section title="Filters">
        <ErrorLine error={apps.error} />
        {/* A new key resets the uncontrolled fields: on Clear, and once the apps (the App options) arrive. */}
        <FilterForm
          key={`${cleared}/${apps.data ? 'apps' : ''}`}
          filters={filters}
          apps={apps.data?.data ?? []}
          onApply={apply}
          focusFirst={cleared > 0}
          onClear={() => {
            setCleared((value) => value + 1);
            apply({});
          }}
        />
      </Section>
      <div className="calls-layout">
        <Section title="Calls, newest first">
          <ErrorLine error={first.error} />
          {first.data ? (
            rows.length ? (
              <ScrollTable label="Calls">
                <table aria-label="Calls">
                  <thead>
                    <tr>
                      <th scope="col">At</th>
                      <th scope="col">Request id</th>
                      <th scope="col">User</th>
                      <th scope="col">Feature</th>
                      <th scope="col">Model</th>
                      <th scope="col">Outcome</th>
                      <th scope="col" className="num">
                        Tokens
                      </th>
                      <th scope="col" className="num">
                        Charge
                      </th>
                      <th scope="col" className="num">
                        Total
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((call) => (
                      <tr key={call.id}>
                        <th scope="row">{call.created_at.slice(0, 19).replace('T', ' ')}</th>
                        <td>
                          <button
                            type="button"
                            className="link"
                            data-call={call.id}
                            aria-expanded={open === call.id}
                            onClick={() => setOpen(open === call.id ? null : call.id)}
                          >
                            {call.request_id}
                          </button>
                        </td>
                        <td>
                          <code className="user-ref" title={call.user_ref}>
                            {call.user_ref.slice(0, 12)}…
                          </code>
                        </td>
                        <td>{call.feature}</td>
                        <td>{call.model ? `${call.provider}:${call.model}` : call.requested_model}</td>
                        <td>
                          {call.outcome}
                          {call.error_code ? ` (${call.error_code})` : ''}
                        </td>
                        <td className="num">{tokens(call)}</td>
                        <td className="num">{usd(call.charge_usd)}</td>
                        <td className="num">{ms(call.total_ms)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </ScrollTable>
            ) : (
              <p className="muted">No calls match these filters.</p>
            )
          ) : first.loading ? (
            <Loading what="calls" />
          ) : null}
          <ErrorLine error={pages.error} />
          <div className="actions">
            <button type="button" className="ghost" disabled={!cursor || pages.busy} onClick={pages.loadMore}>
              More calls
            </button>
            <span className="muted" aria-live="polite">
              {first.data ? `${rows.length} shown${cursor ? '' : ', no more'}` : ''}
            </span>
          </div>
        </Section>
        {open ? <CallDetailPanel callId={open} onClose={close} /> : null}
      </div>
      <Charts app={filters.app} />
    </>
  );
}
