import { useEffect, useId, useMemo } from 'react';
import type { FaucetMetadata } from '@faucet/sdk';
import { classNames } from './class-names.ts';
import { ErrorNotice } from './error-notice.tsx';
import { useFaucetContext } from './faucet-context.tsx';
import { ReceiptStore } from './state/receipt-store.ts';
import { useStore } from './use-store.ts';

export interface FaucetReceiptProps {
  /** The `faucet` metadata of the call's answer: shown at once, then checked against what was booked. */
  faucet?: FaucetMetadata;
  /** A call's request ID, when only that is known. Without either, the receipt follows the user's latest call. */
  requestId?: string;
  title?: string;
  className?: string;
}

/**
 * The receipt of one call: request ID, route, model, tokens and the charge, from the answer's
 * `faucet` metadata and from the usage the server booked (`GET /v1/user/usage?request_id=`).
 * Only call facts are shown; never a key or a token.
 */
export function FaucetReceipt({ faucet, requestId, title = 'Receipt', className }: FaucetReceiptProps) {
  const { client, usageEvents } = useFaucetContext();
  const store = useMemo(() => new ReceiptStore(client), [client]);
  const state = useStore(store);
  const titleId = useId();
  const target = requestId ?? faucet?.request_id;

  useEffect(() => {
    void store.load({ requestId: target });
    // The latest call changes with every call; a named call's booking may land after its answer.
    return usageEvents.subscribe(() => void store.load({ requestId: target }));
  }, [store, usageEvents, target]);

  const record = state.record;
  const shownId = record?.request_id ?? target;
  const routeMode = record?.route_mode ?? faucet?.route_mode;
  const model = record ? `${record.provider}:${record.model}` : faucet ? `${faucet.provider}:${faucet.model}` : undefined;
  const tokens = record ?? faucet;
  const charge = record ? record.charged_usd : faucet?.charge?.amount_usd;
  const booking = state.loading && !record ? 'Checking…' : record ? 'Booked' : state.notBooked ? 'Not booked yet' : '—';

  return (
    <section className={classNames('faucet-receipt', className)} aria-labelledby={titleId} aria-busy={state.loading}>
      <h2 id={titleId} className="faucet-receipt__title">
        {title}
      </h2>
      {shownId === undefined && !state.loading ? (
        <p className="faucet-receipt__empty">No calls yet</p>
      ) : (
        <dl className="faucet-summary faucet-receipt__facts">
          <dt>Request ID</dt>
          <dd className="faucet-receipt__request-id">{shownId ?? '—'}</dd>
          {record ? (
            <>
              <dt>Time</dt>
              <dd className="faucet-receipt__time">
                <time dateTime={record.created_at}>{record.created_at.replace('T', ' ').slice(0, 19)}</time>
              </dd>
              <dt>Feature</dt>
              <dd className="faucet-receipt__feature">{record.feature_key}</dd>
            </>
          ) : null}
          <dt>Route mode</dt>
          <dd className="faucet-receipt__route-mode">{routeMode ?? '—'}</dd>
          <dt>Model</dt>
          <dd className="faucet-receipt__model">{model ?? '—'}</dd>
          <dt>Tokens</dt>
          <dd className="faucet-receipt__tokens">
            {tokens ? `${tokens.input_tokens} in / ${tokens.output_tokens} out${tokens.estimated ? ' (estimated)' : ''}` : '—'}
          </dd>
          <dt>Charge</dt>
          <dd className="faucet-receipt__charge">{charge === undefined ? '—' : `${charge} USD`}</dd>
          <dt>Booking</dt>
          <dd className="faucet-receipt__booking">{booking}</dd>
        </dl>
      )}
      {state.error ? <ErrorNotice error={state.error} /> : null}
    </section>
  );
}
