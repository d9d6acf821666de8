/**
 * The one error type the SDK throws. Server errors keep the code, status and request ID of the
 * `{"error":{"code","message","request_id"}}` envelope; failures that never got an answer use the
 * client codes below with `status` 0.
 *
 * The server's codes and their HTTP statuses (DESIGN §4), repeated here because the SDK ships on
 * its own, without the workers' code.
 */
export const serverErrorStatus = {
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
  unavailable: 503,
  upstream_timeout: 504,
} as const;

export const clientErrorCodes = [
  /** The caller's AbortSignal fired. */
  'aborted',
  /** No response (or no next stream chunk) within the configured time. */
  'timeout',
  /** The request never reached the server (DNS, refused connection, CORS…). */
  'network_error',
  /** The server answered with something that is not the documented shape. */
  'invalid_response',
  /** The local bridge is not running or not reachable. */
  'bridge_unavailable',
] as const;

export type FaucetErrorCode = keyof typeof serverErrorStatus | (typeof clientErrorCodes)[number];

const marker = Symbol.for('faucet.sdk.error');

export interface FaucetErrorOptions {
  status?: number;
  requestId?: string;
  retryAfterMs?: number;
  cause?: unknown;
}

export class FaucetError extends Error {
  readonly [marker] = true;
  readonly code: FaucetErrorCode;
  /** HTTP status of the answer; 0 when there was no answer. */
  readonly status: number;
  /** The `request_id` of the server's answer, when there was one. */
  readonly requestId: string | undefined;
  /** How long the server asked us to wait (`retry-after`), when it did. */
  readonly retryAfterMs: number | undefined;

  constructor(code: FaucetErrorCode, message: string, options: FaucetErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = 'FaucetError';
    this.code = code;
    this.status = options.status ?? 0;
    this.requestId = options.requestId;
    this.retryAfterMs = options.retryAfterMs;
  }

  /** Survives duplicate copies of the SDK in one page, unlike `instanceof`. */
  static isInstance(value: unknown): value is FaucetError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}

const knownCodes = new Set<string>([...Object.keys(serverErrorStatus), ...clientErrorCodes]);

/** Maps a status to a code for answers that carry no (or an unknown) envelope code. */
function codeForStatus(status: number): FaucetErrorCode {
  if (status === 400) return 'invalid_request';
  if (status === 401) return 'unauthorized';
  if (status === 402) return 'insufficient_balance';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status === 413) return 'payload_too_large';
  if (status === 429) return 'rate_limited';
  if (status === 502) return 'upstream_error';
  if (status === 503) return 'unavailable';
  if (status === 504) return 'upstream_timeout';
  return status >= 500 ? 'internal_error' : 'invalid_response';
}

/** Builds the error for a non-2xx answer from its parsed body (or `undefined` if it was not JSON). */
export function errorFromResponse(
  status: number,
  body: unknown,
  headerRequestId: string | undefined,
  retryAfterMs: number | undefined,
): FaucetError {
  const envelope = (body as { error?: { code?: unknown; message?: unknown; request_id?: unknown } } | undefined)?.error;
  const envelopeCode = typeof envelope?.code === 'string' && knownCodes.has(envelope.code) ? envelope.code : undefined;
  const code = (envelopeCode as FaucetErrorCode | undefined) ?? codeForStatus(status);
  const message = typeof envelope?.message === 'string' ? envelope.message : `HTTP ${status}`;
  const requestId = typeof envelope?.request_id === 'string' ? envelope.request_id : headerRequestId;
  return new FaucetError(code, message, { status, requestId, retryAfterMs });
}

/** An error the server reports inside an already started (200) stream. */
export function errorFromStreamEvent(error: { code?: unknown; message?: unknown; request_id?: unknown }): FaucetError {
  const code = typeof error.code === 'string' && knownCodes.has(error.code) ? (error.code as FaucetErrorCode) : 'upstream_error';
  const status = (serverErrorStatus as Record<string, number>)[code] ?? 0;
  return errorFromResponse(status, { error: { ...error, code } }, undefined, undefined);
}
