/**
 * Audit rows, newest first, a page at a time (keyset on id: the cursor is the last id seen). With a
 * developer: the rows they acted in and the rows about them (e.g. their suspension), the same filter
 * for `GET /v1/developer/audit-log` and the admin's `?developer_id=`.
 */
import { and, desc, eq, lt, or } from 'drizzle-orm';
import { auditLogs } from '../../../drizzle/schema.ts';
import type { Db } from '../db.ts';
import type { SelectionRow } from '../ledger/query-selection.ts';
import { FaucetError } from '../wire/errors.ts';

const a = auditLogs;
const auditLogColumns = {
  id: a.id,
  actorType: a.actorType,
  actorId: a.actorId,
  action: a.action,
  targetType: a.targetType,
  targetId: a.targetId,
  requestId: a.requestId,
  metadata: a.metadata,
  createdAt: a.createdAt,
};

export type AuditLogRow = SelectionRow<typeof auditLogColumns>;

export async function listAuditLog(
  db: Db,
  query: { developerId: string | undefined; limit: number; cursor: string | undefined },
): Promise<{ rows: AuditLogRow[]; nextCursor: string | null }> {
  if (query.cursor !== undefined && !/^[0-9]{1,18}$/.test(query.cursor)) throw new FaucetError('invalid_request', 'cursor is malformed');
  const developer =
    query.developerId === undefined
      ? undefined
      : or(
          and(eq(a.actorType, 'developer'), eq(a.actorId, query.developerId)),
          and(eq(a.targetType, 'developer'), eq(a.targetId, query.developerId)),
        );
  const after = query.cursor === undefined ? undefined : lt(a.id, BigInt(query.cursor));
  const rows = await db
    .select(auditLogColumns)
    .from(a)
    .where(and(developer, after))
    .orderBy(desc(a.id))
    .limit(query.limit + 1);
  const more = rows.length > query.limit;
  const shown = rows.slice(0, query.limit);
  return { rows: shown, nextCursor: more ? (shown.at(-1)?.id.toString() ?? null) : null };
}
