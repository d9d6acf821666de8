import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ZodError } from 'zod';
import type { AppEnv } from './app-env.ts';
import { databaseUnavailable, isDatabaseUnreachable } from './database-unreachable.ts';
import { type ErrorCode, errorEnvelope, FaucetError } from './wire/errors.ts';

const codeForStatus: Record<number, ErrorCode> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  429: 'rate_limited',
};

/** Turns any thrown value into the DESIGN §4 envelope; unexpected errors never show their internals. */
export function renderError(error: unknown, c: Context<AppEnv>): Response {
  const requestId = c.get('requestId') ?? 'unknown';
  let faucetError: FaucetError;
  if (FaucetError.isInstance(error)) {
    faucetError = error;
  } else if (error instanceof HTTPException && error.status >= 400 && error.status < 500) {
    // Client errors without a code of their own (e.g. 415 from a body in an undeclared media type) are invalid requests.
    const code = codeForStatus[error.status] ?? 'invalid_request';
    const message = error.status === 400 ? error.message || 'Malformed request' : error.message || code;
    faucetError = new FaucetError(code, message);
  } else if (isDatabaseUnreachable(error)) {
    // A dependency's failure, not ours: 503 with retry-after, whatever route needed the database.
    faucetError = databaseUnavailable();
  } else {
    const name = error instanceof Error ? error.name : typeof error;
    c.get('logger')?.error('unhandled error', { error: name });
    faucetError = new FaucetError('internal_error', 'Internal error');
  }
  if (faucetError.status >= 500) {
    c.get('logger')?.warn('request failed', { code: faucetError.code });
  }
  const response = c.json(errorEnvelope(faucetError.code, faucetError.message, requestId), faucetError.status);
  for (const [name, value] of Object.entries(faucetError.headers)) response.headers.set(name, value);
  response.headers.set('x-request-id', requestId);
  return response;
}

/** A short, safe description of what failed validation: paths and reasons, never the values. */
export function describeZodError(error: ZodError): string {
  const issues = error.issues.slice(0, 5).map((issue) => {
    const path = issue.path.length ? issue.path.join('.') : 'body';
    return `${path}: ${issue.message}`;
  });
  return `Invalid request: ${issues.join('; ')}`;
}
