import { useEffect, useId, useMemo, useState } from 'react';
import type { RouteMode } from '@faucet/sdk';
import { classNames } from './class-names.ts';
import { ErrorNotice } from './error-notice.tsx';
import { useFaucetContext } from './faucet-context.tsx';
import { FaucetUsageSummary } from './faucet-usage-summary.tsx';
import { FeatureStore, parseJsonInput } from './state/feature-store.ts';
import { useStore } from './use-store.ts';

export interface FaucetFeatureCommandProps {
  feature: string;
  /** The feature's input as JSON text; the user can edit it. Invalid JSON is shown as an error. */
  initialInput?: string;
  model?: string;
  routeMode?: RouteMode;
  title?: string;
  className?: string;
}

/** Runs one feature on JSON input and shows the answer with its usage summary. */
export function FaucetFeatureCommand({ feature, initialInput = '""', model, routeMode, title, className }: FaucetFeatureCommandProps) {
  const { client, usageEvents } = useFaucetContext();
  // A new client (another user, other URLs) gets a new store: nothing carries over between users.
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new store only for a new client; the props are read per call (below)
  const store = useMemo(() => new FeatureStore(client, { feature }), [client]);
  // Read when a call starts, so the latest props apply without recreating the store (and losing its state).
  store.settings = { feature, model, routeMode, onSettled: usageEvents.notify };
  useEffect(() => () => store.cancel(), [store]);
  const state = useStore(store);
  const [draft, setDraft] = useState(initialInput);
  const parsed = parseJsonInput(draft);
  const titleId = useId();
  const inputId = useId();
  const resultId = useId();

  return (
    <section className={classNames('faucet-feature', className)} aria-labelledby={titleId} aria-busy={state.busy}>
      <h2 id={titleId} className="faucet-feature__title">
        {title ?? `Run “${feature}”`}
      </h2>
      <form
        className="faucet-feature__form"
        onSubmit={(event) => {
          event.preventDefault();
          if (parsed.ok) void store.run(draft);
        }}
      >
        <label htmlFor={inputId} className="faucet-feature__label">
          Input (JSON)
        </label>
        <textarea
          id={inputId}
          className="faucet-feature__input"
          value={draft}
          rows={4}
          spellCheck={false}
          aria-invalid={!parsed.ok}
          onChange={(event) => setDraft(event.target.value)}
        />
        <button type="submit" className="faucet-button faucet-feature__run" disabled={!parsed.ok || state.busy}>
          {state.busy ? 'Running…' : 'Run'}
        </button>
        {state.busy ? (
          <button type="button" className="faucet-button faucet-feature__cancel" onClick={() => store.cancel()}>
            Cancel
          </button>
        ) : null}
      </form>
      {!parsed.ok ? <ErrorNotice error={parsed.error} /> : state.error ? <ErrorNotice error={state.error} /> : null}
      <div className="faucet-feature__result" id={resultId} aria-live="polite">
        {state.result ? (
          <>
            <p className="faucet-feature__text">{state.result.text}</p>
            <FaucetUsageSummary faucet={state.result.faucet} />
          </>
        ) : null}
      </div>
    </section>
  );
}
