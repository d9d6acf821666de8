import type { FaucetClient, TopUpStatus, Wallet } from '@faucet/sdk';
import { Store, toShownError, type ShownError } from './store.ts';

/**
 * A Stripe top-up of the end user's wallet, across the trip to Stripe and back: `start` asks the
 * API for a checkout, remembers it (session storage) and leaves for Stripe's page; `resume`, on the
 * page Stripe returns to, polls the checkout until the webhook's credit has landed, then shows the
 * credited wallet. It never decides the payment happened from the return URL alone: only the
 * server's `completed` counts.
 */
export type TopUpPhase =
  /** Nothing under way; the balance is shown. */
  | 'idle'
  /** Asking the API for a checkout. */
  | 'starting'
  /** Leaving for Stripe. */
  | 'redirecting'
  /** Back from Stripe, waiting for the payment confirmation (the webhook) to credit the wallet. */
  | 'confirming'
  /** The wallet holds the top-up. */
  | 'credited'
  /** The user cancelled on Stripe's page; nothing was charged. */
  | 'cancelled'
  /** Not confirmed within the wait; it may still arrive (check again). */
  | 'unconfirmed'
  /** The checkout expired or a request failed. */
  | 'failed';

export interface TopUpState {
  phase: TopUpPhase;
  wallet: Wallet | undefined;
  topUp: TopUpStatus | undefined;
  error: ShownError | undefined;
}

/** Where the started checkout is remembered across the redirect (sessionStorage fits). */
export interface TopUpMemory {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export interface TopUpOptions {
  memory?: TopUpMemory | null;
  /** Leaves the page for Stripe; defaults to `location.assign`. */
  navigate?: (url: string) => void;
  /** Between two looks at the checkout while confirming (default 1 s). */
  pollIntervalMs?: number;
  /** How long to wait for the confirmation before saying so (default 60 s). */
  confirmTimeoutMs?: number;
  /** Called once the credit landed, so other views (the usage panel) refresh. */
  onCredited?: () => void;
}

/** `"10"`, `"10.5"`, `"10.50"` → `"10.50000000"`; undefined for anything that is not whole cents. */
export function topUpAmount(text: string): string | undefined {
  const match = /^\s*(\d{1,7})(?:\.(\d{1,2}))?\s*$/.exec(text);
  if (!match) return undefined;
  return `${BigInt(match[1]!).toString()}.${(match[2] ?? '').padEnd(2, '0')}000000`;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

function pageMemory(): TopUpMemory | undefined {
  try {
    const storage = (globalThis as { sessionStorage?: TopUpMemory }).sessionStorage;
    return storage && typeof storage.getItem === 'function' ? storage : undefined;
  } catch {
    return undefined;
  }
}

export class TopUpStore extends Store<TopUpState> {
  private polling: AbortController | undefined;
  private returnedWith: string | null = null;
  private readonly key: string;
  private readonly memory: TopUpMemory | undefined;

  constructor(
    private readonly client: FaucetClient,
    private readonly options: TopUpOptions = {},
  ) {
    super({ phase: 'idle', wallet: undefined, topUp: undefined, error: undefined });
    this.key = `faucet:top-up:${client.publicAppId}`;
    this.memory = options.memory === null ? undefined : (options.memory ?? pageMemory());
  }

  async refreshWallet(): Promise<void> {
    try {
      this.update({ wallet: await this.client.getWallet() });
    } catch (thrown) {
      this.update({ error: toShownError(thrown) });
    }
  }

  /** Starts a checkout for `amountUsd` (8-decimal string) and leaves for Stripe, returning to `returnUrl`. */
  async start(amountUsd: string, returnUrl: string): Promise<void> {
    if (this.getSnapshot().phase === 'starting' || this.getSnapshot().phase === 'redirecting') return;
    this.stop();
    this.update({ phase: 'starting', error: undefined, topUp: undefined });
    try {
      const checkout = await this.client.startTopUp({ amountUsd, returnUrl });
      this.remember(checkout.checkout_session_id);
      this.update({ phase: 'redirecting' });
      (this.options.navigate ?? ((url) => globalThis.location.assign(url)))(checkout.url);
    } catch (thrown) {
      this.update({ phase: 'failed', error: toShownError(thrown) });
    }
  }

  /**
   * On the page Stripe returned to (`checkout` = the `?checkout=` value): waits for the remembered
   * checkout to be credited. Without a remembered checkout it only shows the balance.
   */
  async resume(checkout: string | null): Promise<void> {
    // The page drops `?checkout=` once read; a second mount (React's strict mode) still gets the first answer.
    const outcome = checkout ?? this.returnedWith;
    this.returnedWith = outcome;
    const id = this.remembered();
    if (id === undefined || (outcome !== 'success' && outcome !== 'cancelled')) return this.refreshWallet();
    if (outcome === 'cancelled') {
      this.forget();
      this.update({ phase: 'cancelled', error: undefined });
      return this.refreshWallet();
    }
    return this.confirm(id);
  }

  /** Looks again at a top-up that was not confirmed in time. */
  checkAgain(): Promise<void> {
    const id = this.getSnapshot().topUp?.checkout_session_id ?? this.remembered();
    return id === undefined ? this.refreshWallet() : this.confirm(id);
  }

  /** Stops polling (the component unmounts, or another user signs in). */
  stop(): void {
    this.polling?.abort();
    this.polling = undefined;
  }

  private async confirm(id: string): Promise<void> {
    this.stop();
    const polling = new AbortController();
    this.polling = polling;
    this.update({ phase: 'confirming', error: undefined });
    const deadline = Date.now() + (this.options.confirmTimeoutMs ?? 60_000);
    try {
      while (!polling.signal.aborted) {
        const topUp = await this.client.getTopUp(id, polling.signal);
        this.update({ topUp });
        if (topUp.status === 'completed') {
          this.forget();
          const wallet = await this.client.getWallet(polling.signal);
          this.update({ phase: 'credited', wallet });
          this.options.onCredited?.();
          return;
        }
        if (topUp.status === 'expired') {
          this.forget();
          this.update({ phase: 'failed', error: { code: 'checkout_expired', message: 'The checkout expired before it was paid' } });
          return;
        }
        if (Date.now() >= deadline) {
          this.update({ phase: 'unconfirmed' });
          return;
        }
        await sleep(this.options.pollIntervalMs ?? 1_000, polling.signal);
      }
    } catch (thrown) {
      if (!polling.signal.aborted) this.update({ phase: 'failed', error: toShownError(thrown) });
    } finally {
      if (this.polling === polling) this.polling = undefined;
    }
  }

  private remember(id: string): void {
    try {
      this.memory?.setItem(this.key, id);
    } catch {
      // Without storage the page cannot follow the checkout after Stripe's redirect; the credit still lands.
    }
  }

  private remembered(): string | undefined {
    try {
      return this.memory?.getItem(this.key) ?? undefined;
    } catch {
      return undefined;
    }
  }

  private forget(): void {
    try {
      this.memory?.removeItem(this.key);
    } catch {
      // Nothing to clean up.
    }
  }
}
