/**
 * The one test of "the database is unreachable" (DESIGN §4 `unavailable`): the connection could not
 * be made, was lost, or the server said it cannot take it now. A query the server ran and refused (a
 * constraint, a serialization failure, a missing function) is not one: that stays what it was.
 * Every worker renders such a failure as 503 `unavailable` with `retry-after` (render-error.ts); the
 * wallet object answers it as its own outcome (an error need not keep its cause across an RPC).
 */
import { FaucetError } from './wire/errors.ts';

/** What a client is asked to wait before trying again: an outage of seconds is the common case (a restart, a failover). */
export const databaseRetryAfterSeconds = 5;

/**
 * SQLSTATEs of a connection the server cannot take or has ended: class 08 (connection exception),
 * admin shutdown, crash shutdown, cannot connect now (starting up, shutting down, in recovery), too
 * many connections.
 */
const unreachableStates = new Set(['57P01', '57P02', '57P03', '53300']);

/** Socket errors: the local WebSocket proxy reports its TCP connection's (`code` in Neon's error fields). */
const socketErrors = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * What the drivers say when no server answered: pg (connection ended or timed out, the pool's
 * connect timeout, a client whose connection failed), Neon's HTTP query endpoint when its fetch
 * failed or its proxy could not reach the compute (or answered 502/503/504).
 */
const unreachableMessages = [
  /^Connection terminated( unexpectedly| due to connection timeout)?$/,
  /^timeout exceeded when trying to connect$/,
  /^Query read timeout$/,
  /^Client has encountered a connection error and is not queryable$/,
  /^Error connecting to database: /,
  /^Server error \(HTTP status 50[234]\)/,
  /^Couldn't connect to compute node/,
];

const sqlState = /^[0-9A-Z]{5}$/;

/**
 * Whether `error` (or what it wraps: Drizzle's query error, the Neon driver's `sourceError`) says the
 * database could not be reached. The first SQLSTATE found decides: a server that answered with a
 * query error was reachable.
 */
export function isDatabaseUnreachable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && typeof current === 'object' && current !== null; depth++) {
    // Already answered with a code of its own.
    if (FaucetError.isInstance(current)) return false;
    const { code, message, type, cause, sourceError } = current as Record<string, unknown>;
    if (typeof code === 'string') {
      if (sqlState.test(code)) return code.startsWith('08') || unreachableStates.has(code);
      if (socketErrors.has(code)) return true;
    }
    // The Neon driver's WebSocket failed (refused, closed): pg rejects with the socket's error event itself.
    if (typeof Event === 'function' && current instanceof Event && type === 'error') return true;
    if (typeof message === 'string' && unreachableMessages.some((pattern) => pattern.test(message))) return true;
    current = cause ?? sourceError;
  }
  return false;
}

/** The answer to a request that needed the database and could not reach it (the driver's message is never repeated). */
export function databaseUnavailable(cause?: unknown): FaucetError {
  return new FaucetError('unavailable', 'The database is unreachable; retry after a few seconds.', {
    cause,
    headers: { 'retry-after': String(databaseRetryAfterSeconds) },
  });
}
