/**
 * The one way code runs SQL: a handle with one `execute` of a Drizzle `sql` query, and the helpers
 * that read its rows (`queryRows`, `queryOne`) and guard ids before a `::uuid` cast. Every money
 * operation is a single statement (a server-side function in migrations/functions/), so a plain
 * Drizzle database works — `drizzle-orm/neon-serverless` in the workers, `node-postgres` in scripts —
 * and no interactive transaction is ever held open across round trips.
 */
import type { SQL } from 'drizzle-orm';
import { FaucetError } from './wire/errors.ts';

export interface SqlDatabase {
  execute(query: SQL): PromiseLike<{ rows: unknown[] }>;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

/** Refuse a malformed id before it reaches a `::uuid` cast (which would be a 500). */
export function requireUuid(value: string, what: string): string {
  if (!isUuid(value)) throw new FaucetError('not_found', `${what} not found`);
  return value;
}

/** The driver's error in the cause chain: the one with a SQLSTATE (a wrapper's message may quote the query). */
function databaseError(error: unknown): { code: string; message: string } | undefined {
  for (let current = error; typeof current === 'object' && current !== null; current = (current as { cause?: unknown }).cause) {
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return { code, message: String(message) };
  }
  return undefined;
}

/** The ledger functions' own SQLSTATEs, mapped to coded errors; anything else stays internal. */
function translate(error: unknown): unknown {
  const failure = databaseError(error);
  if (!failure) return error;
  switch (failure.code) {
    case 'P0002':
      return new FaucetError('not_found', 'wallet, app or account not found', { cause: error });
    case '22023':
      return new FaucetError('invalid_request', 'the booking was refused as malformed', { cause: error });
    case '22003':
      return new FaucetError('invalid_request', 'a token count or amount is out of range', { cause: error });
    case '23505':
      return new FaucetError('conflict', 'this request id was already used for another booking', { cause: error });
    case '23514':
      return new FaucetError('insufficient_balance', 'insufficient balance', { cause: error });
    case 'FC409':
      // A cap on live rows (migrations/functions/faucet_cap_live_rows.sql); its message names the cap.
      return new FaucetError('conflict', failure.message, { cause: error });
    default:
      return error;
  }
}

/** Run one query and return its rows, typed by the caller (the SQL returns exactly these columns). */
export async function queryRows<Row>(db: SqlDatabase, query: SQL): Promise<Row[]> {
  try {
    const result = await db.execute(query);
    return result.rows as Row[];
  } catch (error) {
    throw translate(error);
  }
}

export async function queryOne<Row>(db: SqlDatabase, query: SQL): Promise<Row> {
  const [row] = await queryRows<Row>(db, query);
  if (!row) throw new Error('ledger query returned no row');
  return row;
}
