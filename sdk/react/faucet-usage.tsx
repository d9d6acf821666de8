import { useEffect, useId, useMemo } from 'react';
import { classNames } from './class-names.ts';
import { ErrorNotice } from './error-notice.tsx';
import { useFaucetContext } from './faucet-context.tsx';
import { UsageStore } from './state/usage-store.ts';
import { useStore } from './use-store.ts';

export interface FaucetUsageProps {
  /** How many recent calls to list (default 5). */
  limit?: number;
  title?: string;
  className?: string;
}

/** The wallet balance and recent calls; refreshes itself after every chat or feature run in the same provider. */
export function FaucetUsage({ limit = 5, title = 'Usage', className }: FaucetUsageProps) {
  const { client, usageEvents } = useFaucetContext();
  // A new client (another user, other URLs) gets a new store: nothing carries over between users.
  const store = useMemo(() => new UsageStore(client, limit), [client, limit]);
  const state = useStore(store);
  const titleId = useId();

  useEffect(() => {
    void store.refresh();
    return usageEvents.subscribe(() => void store.refresh());
  }, [store, usageEvents]);

  return (
    <section className={classNames('faucet-usage', className)} aria-labelledby={titleId} aria-busy={state.loading}>
      <h2 id={titleId} className="faucet-usage__title">
        {title}
      </h2>
      <p className="faucet-usage__balance-line">
        Balance{' '}
        <output className="faucet-usage__balance" aria-live="polite">
          {state.wallet ? `${state.wallet.balance_usd} ${state.wallet.currency}` : '—'}
        </output>
        {state.wallet && state.wallet.held_usd !== '0.00000000' ? (
          <span className="faucet-usage__held">{` (${state.wallet.held_usd} held)`}</span>
        ) : null}
      </p>
      {state.error ? <ErrorNotice error={state.error} /> : null}
      <table className="faucet-usage__table">
        <caption>Recent usage</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Feature</th>
            <th scope="col">Route</th>
            <th scope="col">Model</th>
            <th scope="col">Tokens</th>
            <th scope="col">Charged (USD)</th>
          </tr>
        </thead>
        <tbody>
          {state.usage.length === 0 ? (
            <tr>
              <td colSpan={6}>No usage yet</td>
            </tr>
          ) : (
            state.usage.map((record) => (
              <tr key={record.request_id} className="faucet-usage__row">
                <td>
                  <time dateTime={record.created_at}>{record.created_at.replace('T', ' ').slice(0, 19)}</time>
                </td>
                <td>{record.feature_key}</td>
                <td>{record.route_mode}</td>
                <td>{`${record.provider}:${record.model}`}</td>
                <td>{`${record.input_tokens} / ${record.output_tokens}${record.estimated ? ' (est.)' : ''}`}</td>
                <td>{record.charged_usd}</td>
              </tr>
            ))
          )}
        </tbody>
      </table>
      <button type="button" className="faucet-button faucet-usage__refresh" onClick={() => void store.refresh()} disabled={state.loading}>
        Refresh
      </button>
    </section>
  );
}
