/**
 * The cursor of a newest-first page (request log, webhook deliveries): the last row's
 * `created_at` with microseconds (`YYYY-MM-DDTHH:MM:SS.ffffffZ`, so it is exact) and its id.
 */
import { FaucetError } from './errors.ts';

const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** The SQL that renders a timestamptz column as a cursor's time. */
export const cursorTimeFormat = 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"';

export function parseTimeCursor(cursor: string | undefined): { at: string; id: string } | null {
  if (cursor === undefined) return null;
  const match = CURSOR.exec(cursor);
  const time = match ? Date.parse(match[1]!) : Number.NaN;
  if (!match || !Number.isFinite(time) || new Date(time).toISOString().slice(0, 23) !== match[1]!.slice(0, 23)) {
    throw new FaucetError('invalid_request', 'cursor is malformed');
  }
  return { at: match[1]!, id: match[2]! };
}

export function timeCursor(row: { created_at: string; id: string }): string {
  return `${row.created_at}_${row.id}`;
}
