import { FaucetError } from '../wire/errors.ts';
import { checkUpstreamUrl } from './address-guard.ts';
import { answerReadWhole, maxUpstreamBodyBytes } from './read-body.ts';

/** The fetch the gateway uses for upstreams; tests pass their own to intercept without network. */
export type FetchFunction = (input: Request) => Promise<Response>;

export interface OutboundOptions {
  fetch: FetchFunction;
  /** Longest wait for the response headers, and then for each next piece of the body. */
  timeoutMs: number;
  /** Aborted when the caller no longer wants the answer (client went away). */
  signal?: AbortSignal;
  /** The one loopback `host:port` a local stack may call (loopback-allowance.ts). */
  allowLoopback?: string | null;
  /**
   * For a caller that needs the whole answer anyway (a non-streamed completion): a 2xx answer that is
   * uncompressed and declares its length (at most `maxUpstreamBodyBytes`) is read by the runtime in
   * one go before returning, and must come whole within one timeout of its headers (in workerd a
   * stream made in JS costs a measurable share of a call). Any other answer is returned as the
   * guarded stream, whose reader (read-body.ts) limits its size.
   */
  buffered?: boolean;
}

export const defaultUpstreamTimeoutMs = 120_000;

/**
 * The only way the gateway talks to a provider. Refuses non-public destinations, never follows a
 * redirect (each hop would need its own check), and turns every transport failure into a
 * FaucetError: `upstream_timeout` (504) when the upstream stalls, `upstream_error` (502) otherwise.
 * The returned body is wrapped (or, `buffered`, read already) so that stalls and failures while
 * reading it map the same way.
 */
export async function outboundFetch(
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
  options: OutboundOptions,
): Promise<Response> {
  const verdict = checkUpstreamUrl(url, { allowLoopback: options.allowLoopback ?? null });
  if (!verdict.allowed) {
    throw new FaucetError('upstream_error', `Refusing to call the upstream: ${verdict.reason}.`);
  }
  const watchdog = new Watchdog(options.timeoutMs, options.signal);
  const request = new Request(verdict.url.toString(), {
    method: init.method,
    headers: init.headers,
    body: init.body ?? null,
    redirect: 'manual',
    signal: watchdog.signal,
  });

  let response: Response;
  try {
    response = await options.fetch(request);
  } catch (error) {
    watchdog.stop();
    throw watchdog.explain(error);
  }
  if (response.status >= 300 && response.status < 400) {
    watchdog.stop();
    await response.body?.cancel().catch(() => undefined);
    throw new FaucetError('upstream_error', `The upstream answered with a redirect (HTTP ${response.status}), which is not followed.`);
  }
  if (response.body === null) {
    watchdog.stop();
    return response;
  }
  const answer = { status: response.status, statusText: response.statusText, headers: response.headers };
  // An error's body stays a stream: its reader (upstream-failure.ts) takes only the first bytes.
  if (options.buffered === true && response.ok && declaresItsLength(response)) {
    return answerReadWhole(await readWhole(response, watchdog), answer);
  }
  return new Response(guardBody(response.body, watchdog), answer);
}

/** An uncompressed body whose declared length is within the size a completion may have. */
function declaresItsLength(response: Response): boolean {
  const encoding = response.headers.get('content-encoding');
  if (encoding !== null && encoding !== 'identity') return false;
  const length = Number(response.headers.get('content-length') ?? Number.NaN);
  return Number.isSafeInteger(length) && length >= 0 && length <= maxUpstreamBodyBytes;
}

/**
 * A body of known length, read and decoded (UTF-8, as `Response.text()` always does) by the runtime in
 * one go (the read loop in JS was the largest single part of a call's CPU in workerd's profile): it
 * must arrive whole within one timeout of the headers. Its declared length is within the limit, and
 * the text has at most one UTF-16 unit per byte.
 */
async function readWhole(response: Response, watchdog: Watchdog): Promise<string> {
  watchdog.restart();
  let whole: string;
  try {
    whole = await watchdog.race(response.text());
  } catch (error) {
    throw watchdog.explain(error);
  } finally {
    watchdog.stop();
  }
  if (whole.length > maxUpstreamBodyBytes) {
    throw new FaucetError('upstream_error', `The upstream answer exceeded ${maxUpstreamBodyBytes} bytes.`);
  }
  return whole;
}

function guardBody(body: ReadableStream<Uint8Array>, watchdog: Watchdog): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  watchdog.restart();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await watchdog.race(reader.read());
        if (done) {
          watchdog.stop();
          controller.close();
          return;
        }
        watchdog.restart();
        controller.enqueue(value);
      } catch (error) {
        watchdog.stop();
        reader.cancel().catch(() => undefined);
        controller.error(watchdog.explain(error));
      }
    },
    cancel(reason) {
      watchdog.stop();
      return reader.cancel(reason);
    },
  });
}

/** One abort signal for the upstream exchange, fired by a restartable inactivity timer or by the caller. */
class Watchdog {
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** `Date.now()` after which the exchange counts as stalled. */
  private deadline = 0;
  private timedOut = false;
  private readonly timeoutMs: number;
  private readonly callerSignal: AbortSignal | undefined;
  /** Rejects the read `race` waits on, if any. */
  private pending: ((reason: unknown) => void) | undefined;

  constructor(timeoutMs: number, callerSignal: AbortSignal | undefined) {
    this.timeoutMs = timeoutMs;
    this.callerSignal = callerSignal;
    if (callerSignal?.aborted) this.controller.abort(callerSignal.reason);
    callerSignal?.addEventListener('abort', () => this.controller.abort(callerSignal.reason), { once: true });
    // One listener for the whole exchange: it rejects the read pending at the time (adding and removing
    // a listener per read cost a measurable share of a call's CPU in workerd).
    this.controller.signal.addEventListener('abort', () => this.pending?.(this.controller.signal.reason), { once: true });
    this.restart();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * Moves the deadline only: the timer already set checks it when it fires and waits out what is left.
   * (Clearing and setting a timer per chunk cost a measurable share of a call's CPU in workerd.)
   */
  restart(): void {
    this.deadline = Date.now() + this.timeoutMs;
    if (this.timer === undefined) this.arm(this.timeoutMs);
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => {
      const left = this.deadline - Date.now();
      if (left > 0) {
        this.arm(left);
        return;
      }
      this.timer = undefined;
      this.timedOut = true;
      this.controller.abort(new Error('upstream timeout'));
    }, ms);
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * Settles with the read, or rejects as soon as the exchange is aborted (some runtimes keep a read
   * pending). One read at a time: each caller awaits its read before starting the next.
   */
  race<T>(operation: Promise<T>): Promise<T> {
    const signal = this.controller.signal;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      this.pending = reject;
      operation.then(
        (value) => {
          if (this.pending === reject) this.pending = undefined;
          resolve(value);
        },
        (error: unknown) => {
          if (this.pending === reject) this.pending = undefined;
          reject(error);
        },
      );
    });
  }

  explain(error: unknown): FaucetError {
    if (FaucetError.isInstance(error)) return error;
    if (this.timedOut) {
      return new FaucetError('upstream_timeout', `The upstream did not answer within ${this.timeoutMs} ms.`, { cause: error });
    }
    if (this.callerSignal?.aborted) {
      return new FaucetError('upstream_error', 'The call was cancelled before the upstream finished.', { cause: error });
    }
    return new FaucetError('upstream_error', 'The upstream could not be reached.', { cause: error });
  }
}
