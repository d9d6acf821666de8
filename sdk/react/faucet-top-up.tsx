import { useEffect, useId, useMemo, useState } from 'react';
import { classNames } from './class-names.ts';
import { ErrorNotice } from './error-notice.tsx';
import { useFaucetContext } from './faucet-context.tsx';
import { TopUpStore, topUpAmount, type TopUpMemory, type TopUpState } from './state/top-up-store.ts';
import { useStore } from './use-store.ts';

export interface FaucetTopUpProps {
  /** The amount first shown in the field, in USD (whole cents), default `10.00`. */
  defaultAmount?: string;
  /** Where Stripe sends the user back; defaults to this page (without its `checkout` parameter). */
  returnUrl?: string;
  title?: string;
  className?: string;
  /** Between two looks at the checkout after the return (default 1 s). */
  pollIntervalMs?: number;
  /** How long to wait for the payment confirmation before offering "Check again" (default 60 s). */
  confirmTimeoutMs?: number;
  /** Where the started checkout is kept across the redirect; default sessionStorage. */
  memory?: TopUpMemory | null;
  /** Leaves for Stripe's page; default `location.assign`. */
  navigate?: (url: string) => void;
}

/** The page's URL without the `checkout` parameter Stripe's redirect added. */
function pageWithoutCheckout(): string {
  const url = new URL(globalThis.location.href);
  url.searchParams.delete('checkout');
  return url.toString();
}

function statusText(state: TopUpState): string {
  const amount = state.topUp ? `${state.topUp.amount_usd} USD` : 'the top-up';
  switch (state.phase) {
    case 'starting':
      return 'Starting the checkout…';
    case 'redirecting':
      return 'Taking you to the payment page…';
    case 'confirming':
      return `Waiting for the payment confirmation of ${amount}…`;
    case 'credited':
      return `${amount} added to your balance.`;
    case 'cancelled':
      return 'Top-up cancelled: nothing was charged.';
    case 'unconfirmed':
      return `The payment of ${amount} is not confirmed yet; it is credited as soon as it is.`;
    case 'failed':
      return 'The top-up did not go through.';
    default:
      return '';
  }
}

/**
 * Adds money to the end user's wallet through Stripe Checkout: the user picks an amount, pays on
 * Stripe's page, comes back here, and sees the credited balance once the payment is confirmed.
 */
export function FaucetTopUp({
  defaultAmount = '10.00',
  returnUrl,
  title = 'Top up',
  className,
  pollIntervalMs,
  confirmTimeoutMs,
  memory,
  navigate,
}: FaucetTopUpProps) {
  const { client, usageEvents } = useFaucetContext();
  // A new client (another user, other URLs) gets a new store: nothing carries over between users.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the options are read once per client, like the provider's
  const store = useMemo(
    () => new TopUpStore(client, { memory, navigate, pollIntervalMs, confirmTimeoutMs, onCredited: usageEvents.notify }),
    [client, usageEvents],
  );
  const state = useStore(store);
  const [draft, setDraft] = useState(defaultAmount);
  const amount = topUpAmount(draft);
  const titleId = useId();
  const inputId = useId();
  const hintId = useId();
  const busy = state.phase === 'starting' || state.phase === 'redirecting' || state.phase === 'confirming';

  useEffect(() => {
    // Back from Stripe? The page URL says how it ended; the server says whether it was paid.
    const checkout = new URL(globalThis.location.href).searchParams.get('checkout');
    void store.resume(checkout);
    if (checkout !== null) globalThis.history.replaceState(globalThis.history.state, '', pageWithoutCheckout());
    const unsubscribe = usageEvents.subscribe(() => {
      if (store.getSnapshot().phase !== 'confirming') void store.refreshWallet();
    });
    return () => {
      unsubscribe();
      store.stop();
    };
  }, [store, usageEvents]);

  const status = statusText(state);
  return (
    <section className={classNames('faucet-topup', className)} aria-labelledby={titleId} aria-busy={busy} data-phase={state.phase}>
      <h2 id={titleId} className="faucet-topup__title">
        {title}
      </h2>
      <p className="faucet-topup__balance-line">
        Balance{' '}
        <output className="faucet-topup__balance" aria-live="polite">
          {state.wallet ? `${state.wallet.balance_usd} ${state.wallet.currency}` : '—'}
        </output>
      </p>
      <p className="faucet-topup__status" role="status">
        {status}
      </p>
      {state.error ? <ErrorNotice error={state.error} /> : null}
      {state.phase === 'unconfirmed' || (state.phase === 'failed' && state.topUp) ? (
        <button type="button" className="faucet-button faucet-topup__check" onClick={() => void store.checkAgain()}>
          Check again
        </button>
      ) : null}
      <form
        className="faucet-topup__form"
        onSubmit={(event) => {
          event.preventDefault();
          if (amount !== undefined) void store.start(amount, returnUrl ?? pageWithoutCheckout());
        }}
      >
        <label htmlFor={inputId} className="faucet-topup__label">
          Amount (USD)
        </label>
        <input
          id={inputId}
          className="faucet-topup__input"
          inputMode="decimal"
          autoComplete="off"
          value={draft}
          aria-invalid={amount === undefined}
          aria-describedby={hintId}
          onChange={(event) => setDraft(event.target.value)}
        />
        <button type="submit" className="faucet-button faucet-topup__pay" disabled={amount === undefined || busy}>
          {state.phase === 'starting' || state.phase === 'redirecting' ? 'Opening checkout…' : 'Top up'}
        </button>
        <p id={hintId} className="faucet-topup__hint">
          {amount === undefined
            ? 'Enter an amount in dollars and cents, e.g. 10.00.'
            : 'You pay on Stripe’s secure page, then come back here.'}
        </p>
      </form>
    </section>
  );
}
