import { FaucetError } from '../errors.ts';

/**
 * One abortable attempt: follows the caller's signal and a re-armable timer, and tells afterwards
 * which of the two (if any) cut the attempt short, so the error says `aborted` or `timeout`.
 */
export class Deadline {
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timedOut = false;
  private readonly onParentAbort = () => this.controller.abort(this.parent?.reason);

  constructor(private readonly parent: AbortSignal | undefined) {
    this.signal = this.controller.signal;
    if (parent?.aborted) this.controller.abort(parent.reason);
    else parent?.addEventListener('abort', this.onParentAbort, { once: true });
  }

  /** (Re)starts the timer; `ms <= 0` or Infinity means no limit. */
  arm(ms: number): void {
    this.disarm();
    if (!(ms > 0) || ms === Infinity) return;
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort(new FaucetError('timeout', `No answer within ${ms} ms`));
    }, ms);
  }

  disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Cancels whatever still runs under this deadline (e.g. an unread body) and detaches. */
  dispose(): void {
    this.disarm();
    this.parent?.removeEventListener('abort', this.onParentAbort);
    if (!this.controller.signal.aborted) this.controller.abort();
  }

  /** Turns whatever a fetch or a body read threw into the SDK's error. */
  toError(thrown: unknown, what: string): FaucetError {
    if (FaucetError.isInstance(thrown) && !this.timedOut) return thrown;
    if (this.parent?.aborted) return new FaucetError('aborted', `${what} was aborted`, { cause: this.parent.reason });
    if (this.timedOut) return new FaucetError('timeout', `${what} timed out`, { cause: thrown });
    return new FaucetError('network_error', `${what} failed: ${describe(thrown)}`, { cause: thrown });
  }
}

function describe(thrown: unknown): string {
  return thrown instanceof Error ? thrown.message : String(thrown);
}

/** Throws the SDK's `aborted` error if the signal has fired. */
export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw new FaucetError('aborted', `${what} was aborted`, { cause: signal.reason });
}

/** Waits `ms`, or rejects with `aborted` as soon as the signal fires. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new FaucetError('aborted', 'Request was aborted', { cause: signal.reason }));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new FaucetError('aborted', 'Request was aborted', { cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
