/**
 * An app's low-balance alert (docs/webhooks.md): an end user whose balance falls below the threshold
 * sends `end_user.balance_low` to the developer's webhook endpoints, once per crossing. The amount is
 * sent as typed (`0.5` as `0.50000000`); empty turns the alert off. The API's refusal shows at the form.
 */
import { type FormEvent, useId } from 'react';
import type { ApiClient } from '../../api.ts';
import { usdField } from '../../ui/forms.ts';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Loading, Outcome, usd } from '../../ui/parts.tsx';
import { useAction } from '../../ui/useAction.ts';
import type { App } from './types.ts';
import type { AppAlerts as Alerts } from './webhooks-wire.ts';

export function AppAlerts({ api, app }: { api: ApiClient; app: App }) {
  const path = `/v1/developer/apps/${encodeURIComponent(app.public_app_id)}/alerts`;
  const alerts = useLoad(() => api.get<Alerts>(path), [api, path]);
  const save = useAction();
  const inputId = useId();
  const hintId = useId();
  const threshold = alerts.data?.low_balance_threshold_usd ?? null;

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const value = usdField(String(new FormData(event.currentTarget).get('low_balance_threshold_usd') ?? ''));
    const done = value === null ? 'Low-balance alert turned off.' : 'Low-balance threshold saved.';
    if (await save.run(() => api.put(path, { low_balance_threshold_usd: value }), done)) alerts.reload();
  }

  return (
    <>
      <h3>Low-balance alert</h3>
      <ErrorLine error={alerts.error} />
      {alerts.data ? (
        <form onSubmit={submit} aria-label={`Low-balance alert of ${app.name}`}>
          <p className="muted">
            {threshold === null
              ? 'No threshold: no end user of this app sends end_user.balance_low.'
              : `An end user whose balance falls below ${usd(threshold)} sends end_user.balance_low to your webhooks.`}
          </p>
          <div className="field">
            <label htmlFor={inputId}>Low-balance threshold (USD)</label>
            {/* A new key when the stored threshold changes: the field shows it. */}
            <input
              key={threshold ?? 'none'}
              id={inputId}
              name="low_balance_threshold_usd"
              inputMode="decimal"
              autoComplete="off"
              defaultValue={threshold ?? ''}
              aria-describedby={hintId}
            />
            <small id={hintId} className="muted">
              Once per crossing: a top-up above it arms it again. Empty = no alert
            </small>
          </div>
          <Outcome error={save.error} done={save.done} />
          <button type="submit" disabled={save.busy}>
            Save threshold
          </button>
        </form>
      ) : alerts.loading ? (
        <Loading what="alerts" />
      ) : null}
    </>
  );
}
