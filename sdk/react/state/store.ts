import { FaucetError } from '@faucet/sdk';

/** A minimal external store for `useSyncExternalStore`: immutable snapshots, change listeners. */
export class Store<State> {
  private listeners = new Set<() => void>();

  constructor(private state: State) {}

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  readonly getSnapshot = (): State => this.state;

  protected update(change: Partial<State>): void {
    this.state = { ...this.state, ...change };
    for (const listener of this.listeners) listener();
  }
}

/** What the components show for a failure: never a stack, always the request ID when there is one. */
export interface ShownError {
  code: string;
  message: string;
  requestId?: string;
}

export function toShownError(thrown: unknown): ShownError {
  if (FaucetError.isInstance(thrown)) {
    return { code: thrown.code, message: thrown.message, ...(thrown.requestId ? { requestId: thrown.requestId } : {}) };
  }
  return { code: 'internal_error', message: 'Something went wrong' };
}

export function isAbort(thrown: unknown): boolean {
  return FaucetError.isInstance(thrown) && thrown.code === 'aborted';
}
