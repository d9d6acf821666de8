/**
 * Audit rows, newest first, a page at a time (keyset on id: the cursor is the last id seen). With a
 * developer: the rows they acted in and the rows about them (e.g. their suspension), the same filter
 * for `GET /v1/developer/audit-log` and the admin's `?developer_id=`.
 */
import { sql } from 'drizzle-orm';
import { queryRows, type LedgerDatabase } from '../ledger/database.ts';
import { FaucetError } from '../wire/errors.ts';

export interface AuditLogRow {
  id: string;
  actor_type: string;
  actor_id: string | null;
  action: string;
  target_type: string;
  target_id: string;
  request_id: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
}

export async function listAuditLog(
  db: LedgerDatabase,
  query: { developerId: string | undefined; limit: number; cursor: string | undefined },
): Promise<{ rows: AuditLogRow[]; nextCursor: string | null }> {
  if (query.cursor !== undefined && !/^[0-9]{1,18}$/.test(query.cursor)) throw new FaucetError('invalid_request', 'cursor is malformed');
  const developer =
    query.developerId === undefined
      ? sql`true`
      : sql`((a.actor_type = 'developer' and a.actor_id = ${query.developerId})
             or (a.target_type = 'developer' and a.target_id = ${query.developerId}))`;
  const after = query.cursor === undefined ? sql`true` : sql`a.id < ${query.cursor}::bigint`;
  const rows = await queryRows<AuditLogRow>(
    db,
    sql`select a.id::text as id, a.actor_type, a.actor_id, a.action, a.target_type, a.target_id, a.request_id, a.metadata,
               a.created_at
          from audit_logs a where ${developer} and ${after} order by a.id desc limit ${query.limit + 1}`,
  );
  const more = rows.length > query.limit;
  const shown = rows.slice(0, query.limit);
  return { rows: shown, nextCursor: more ? (shown.at(-1)?.id ?? null) : null };
}
