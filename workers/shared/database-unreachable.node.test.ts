/**
 * The one test of "the database is unreachable", over the shapes the drivers give: pg (over the Neon
 * driver's WebSocket), the Neon driver's HTTP query endpoint, the local proxy's socket errors, and
 * Drizzle's wrapper around each. A server that answered with a query error is never an outage.
 */
import { describe, expect, it } from 'vitest';
import { databaseRetryAfterSeconds, databaseUnavailable, isDatabaseUnreachable } from './database-unreachable.ts';
import { FaucetError } from './wire/errors.ts';

/** Drizzle's wrapper: its message quotes the query; the driver's error is its cause. */
const drizzle = (cause: unknown, query = 'select 1') =>
  Object.assign(new Error(`Failed query: ${query}\nparams: `), { query, params: [], cause });
/** pg's DatabaseError: the server's SQLSTATE and message. */
const postgres = (code: string, message: string) => Object.assign(new Error(message), { name: 'error', severity: 'ERROR', code });
/** The Neon driver's HTTP error: a 400 carries the server's fields; a failed fetch its `sourceError`. */
const neonHttp = (message: string, fields: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { name: 'NeonDbError', ...fields });
const socket = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, errno: -111, syscall: 'connect' });

const unreachable: Array<[string, unknown]> = [
  ['pg: the server closed the connection (stopped, proxy gone)', drizzle(new Error('Connection terminated unexpectedly'))],
  ['pg: the connection timed out', drizzle(new Error('Connection terminated due to connection timeout'))],
  ['pg: a client ended mid-query', drizzle(new Error('Connection terminated'))],
  ['pg-pool: no connection within its timeout', drizzle(new Error('timeout exceeded when trying to connect'))],
  ['pg: a client whose connection failed', drizzle(new Error('Client has encountered a connection error and is not queryable'))],
  ['pg: no answer within the read timeout', new Error('Query read timeout')],
  ["Neon's WebSocket refused: pg rejects with the socket's error event", drizzle(new Event('error'))],
  [
    'Neon HTTP: the fetch failed',
    drizzle(neonHttp('Error connecting to database: TypeError: fetch failed', { sourceError: new TypeError('fetch failed') })),
  ],
  ['Neon HTTP: the endpoint answered 503', drizzle(neonHttp('Server error (HTTP status 503): service unavailable'))],
  ['Neon HTTP: the endpoint answered 502', neonHttp('Server error (HTTP status 502): bad gateway')],
  ["Neon's proxy cannot reach the compute", neonHttp("Couldn't connect to compute node")],
  [
    'local proxy: PostgreSQL refused the TCP connection',
    drizzle(neonHttp('connect ECONNREFUSED 127.0.0.1:5432', { code: 'ECONNREFUSED' })),
  ],
  ['socket reset', socket('ECONNRESET')],
  ['socket timed out', socket('ETIMEDOUT')],
  ['host unreachable', socket('EHOSTUNREACH')],
  ['DNS lookup failed for now', socket('EAI_AGAIN')],
  ['08006 connection_failure', drizzle(postgres('08006', 'connection failure'))],
  ['08001 unable to establish a connection', postgres('08001', 'could not connect to server')],
  ['08003 connection does not exist', postgres('08003', 'connection does not exist')],
  ['08P01 protocol violation', postgres('08P01', 'protocol violation')],
  [
    '57P01 admin shutdown (fast shutdown, pg_terminate_backend)',
    drizzle(postgres('57P01', 'terminating connection due to administrator command')),
  ],
  ['57P02 crash shutdown', postgres('57P02', 'terminating connection because of crash of another server process')],
  ['57P03 cannot connect now (starting up)', drizzle(neonHttp('the database system is starting up', { code: '57P03' }))],
  ['53300 too many connections', postgres('53300', 'sorry, too many clients already')],
];

const notUnreachable: Array<[string, unknown]> = [
  ['23505 unique violation', drizzle(postgres('23505', 'duplicate key value violates unique constraint'))],
  ['23514 check violation', drizzle(postgres('23514', 'new row violates check constraint'))],
  ['40001 serialization failure', drizzle(postgres('40001', 'could not serialize access'))],
  ['40P01 deadlock', drizzle(postgres('40P01', 'deadlock detected'))],
  ['42883 undefined function', drizzle(neonHttp('function faucet_x() does not exist', { code: '42883' }))],
  ['57014 statement timeout (the server ran it)', drizzle(postgres('57014', 'canceling statement due to statement timeout'))],
  ['3D000 database does not exist (configuration)', drizzle(postgres('3D000', 'database "x" does not exist'))],
  ['28P01 wrong password (configuration)', drizzle(postgres('28P01', 'password authentication failed'))],
  ['a raise from a SQL function', drizzle(postgres('P0001', 'Connection terminated unexpectedly'))],
  [
    'a query error whose query text names a connection failure',
    drizzle(postgres('22012', 'division by zero'), "select 'Error connecting to database: '"),
  ],
  ['Neon HTTP: the endpoint answered 500', neonHttp('Server error (HTTP status 500): internal')],
  ["an upstream provider's failed fetch (no database in it)", new TypeError('fetch failed')],
  ["a Durable Object's lost connection", new Error('Network connection lost.')],
  ['a coded Faucet error', new FaucetError('upstream_error', 'Connection terminated unexpectedly')],
  ['an error body that is not an event', { type: 'error', error: { type: 'overloaded_error' } }],
  ['an event that is not an error', drizzle(new Event('close'))],
  ['a plain error', new Error('boom')],
  ['not an object', 'ECONNREFUSED'],
  ['nothing', undefined],
];

describe('isDatabaseUnreachable', () => {
  it.each(unreachable)('%s: unreachable', (_what, error) => {
    expect(isDatabaseUnreachable(error)).toBe(true);
  });

  it.each(notUnreachable)('%s: not unreachable', (_what, error) => {
    expect(isDatabaseUnreachable(error)).toBe(false);
  });

  it('ends on an error that is its own cause', () => {
    const looped = new Error('Failed query: select 1');
    (looped as { cause?: unknown }).cause = looped;
    expect(isDatabaseUnreachable(looped)).toBe(false);
  });
});

describe('databaseUnavailable', () => {
  it('is 503 unavailable with retry-after, and never repeats the driver', () => {
    const error = databaseUnavailable(drizzle(neonHttp('connect ECONNREFUSED 10.0.0.7:5432', { code: 'ECONNREFUSED' })));
    expect({ code: error.code, status: error.status, headers: error.headers }).toEqual({
      code: 'unavailable',
      status: 503,
      headers: { 'retry-after': String(databaseRetryAfterSeconds) },
    });
    expect(error.message).not.toMatch(/ECONNREFUSED|10\.0\.0\.7|select/);
  });
});
