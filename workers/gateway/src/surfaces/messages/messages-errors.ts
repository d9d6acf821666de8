/**
 * Errors on the Messages surface, in the superset envelope both client families read (DESIGN §4):
 * `{type: "error", error: {type, code, message, request_id}, request_id}`. Anthropic's SDK reads
 * `error.type` and the top-level `request_id`; Faucet's clients read `error.code`. The HTTP status
 * is Faucet's, unchanged.
 */
import { databaseUnavailable, isDatabaseUnreachable } from '#shared/database-unreachable.ts';
import { type ErrorCode, FaucetError } from '#shared/wire/errors.ts';

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'billing_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'timeout_error'
  | 'overloaded_error';

/**
 * Anthropic's own types for its own statuses (402 is its `billing_error`, 413 `request_too_large`,
 * 504 `timeout_error`). A conflict has no Anthropic type and reads as an invalid request; an
 * unreachable database as `overloaded_error`, which Claude Code retries like Anthropic's 529.
 */
export const anthropicErrorTypes: Record<ErrorCode, AnthropicErrorType> = {
  invalid_request: 'invalid_request_error',
  unauthorized: 'authentication_error',
  insufficient_balance: 'billing_error',
  budget_exceeded: 'billing_error',
  forbidden: 'permission_error',
  not_found: 'not_found_error',
  conflict: 'invalid_request_error',
  invalid_state: 'invalid_request_error',
  payload_too_large: 'request_too_large',
  rate_limited: 'rate_limit_error',
  internal_error: 'api_error',
  upstream_error: 'api_error',
  unavailable: 'overloaded_error',
  upstream_timeout: 'timeout_error',
};

export interface MessagesErrorBody {
  type: 'error';
  error: { type: AnthropicErrorType; code: ErrorCode; message: string; request_id: string };
  request_id: string;
}

/** Any thrown value as a FaucetError: an unexpected one never shows its internals (as render-error.ts does). */
export function asFaucetError(error: unknown): FaucetError {
  if (FaucetError.isInstance(error)) return error;
  if (isDatabaseUnreachable(error)) return databaseUnavailable();
  return new FaucetError('internal_error', 'Internal error');
}

export function messagesErrorBody(error: FaucetError, requestId: string): MessagesErrorBody {
  return {
    type: 'error',
    error: { type: anthropicErrorTypes[error.code], code: error.code, message: error.message, request_id: requestId },
    request_id: requestId,
  };
}

/** The whole response: status unchanged, the error's own headers (`retry-after`) and `x-request-id` kept. */
export function messagesErrorResponse(error: unknown, requestId: string): Response {
  const failure = asFaucetError(error);
  const headers = new Headers(failure.headers);
  headers.set('content-type', 'application/json');
  headers.set('x-request-id', requestId);
  return new Response(JSON.stringify(messagesErrorBody(failure, requestId)), { status: failure.status, headers });
}
