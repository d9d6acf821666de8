/**
 * The one error type every Faucet component throws. A closed set of codes, one table from code to
 * HTTP status; transports render it as `{"error":{"code","message","request_id"}}`.
 */
export const errorStatus = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_balance: 402,
  budget_exceeded: 402,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  invalid_state: 409,
  payload_too_large: 413,
  rate_limited: 429,
  internal_error: 500,
  upstream_error: 502,
  /** A dependency (the database) is unreachable; answered with `retry-after`. */
  unavailable: 503,
  upstream_timeout: 504,
} as const;

export type ErrorCode = keyof typeof errorStatus;
export type ErrorStatus = (typeof errorStatus)[ErrorCode];

const marker = Symbol.for('faucet.error');

export class FaucetError extends Error {
  readonly [marker] = true;
  readonly code: ErrorCode;
  readonly status: ErrorStatus;
  /** Extra response headers, e.g. `retry-after` on `rate_limited` and `unavailable`. */
  readonly headers: Record<string, string>;
  /** For an upstream's refusal: the HTTP status it answered with (the gateway's fallback records it, never sends it as its own). */
  readonly upstreamStatus: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { cause?: unknown; headers?: Record<string, string>; upstreamStatus?: number } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'FaucetError';
    this.code = code;
    this.status = errorStatus[code];
    this.headers = options.headers ?? {};
    this.upstreamStatus = options.upstreamStatus;
  }

  /** Survives duplicate module copies (bundles, workspaces), unlike `instanceof`. */
  static isInstance(value: unknown): value is FaucetError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; request_id: string };
}

export function errorEnvelope(code: ErrorCode, message: string, requestId: string): ErrorEnvelope {
  return { error: { code, message, request_id: requestId } };
}
