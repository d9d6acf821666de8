import type { FaucetError } from '../errors.ts';

export interface RetryOptions {
  /** Extra attempts after the first (default 2). */
  maxRetries: number;
  /** First backoff step; doubles on each retry (default 300 ms). */
  baseDelayMs: number;
  /** Longest wait the SDK accepts; a longer `retry-after` ends the call with the error (default 20 s). */
  maxDelayMs: number;
}

export const defaultRetryOptions: RetryOptions = { maxRetries: 2, baseDelayMs: 300, maxDelayMs: 20_000 };

/** 429 and 5xx are worth another try, and so is a request that never reached the server. Other 4xx never are. */
export function isRetryable(error: FaucetError): boolean {
  if (error.code === 'network_error') return true;
  return error.status === 429 || error.status >= 500;
}

/** `retry-after` in seconds or as an HTTP date, in milliseconds; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * How long to wait before retry number `retry` (0-based), or undefined to give up. The server's
 * `retry-after` wins over the exponential backoff (which has jitter so clients do not retry in step).
 */
export function retryDelay(
  error: FaucetError,
  retry: number,
  options: RetryOptions,
  random: () => number = Math.random,
): number | undefined {
  if (retry >= options.maxRetries || !isRetryable(error)) return undefined;
  if (error.retryAfterMs !== undefined) return error.retryAfterMs <= options.maxDelayMs ? error.retryAfterMs : undefined;
  const step = options.baseDelayMs * 2 ** retry;
  return Math.min(options.maxDelayMs, Math.round(step / 2 + (random() * step) / 2));
}
