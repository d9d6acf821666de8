export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
}

/** Exponential backoff with jitter in [50 %, 100 %] of the step, so many bridges do not retry in lockstep. */
export function backoffDelay(attempts: number, options: BackoffOptions, random: () => number = Math.random): number {
  const step = Math.min(options.maxMs, options.baseMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(step * (0.5 + random() * 0.5));
}

/** 408, 425, 429 and every 5xx may succeed later; any other 4xx will not. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}
