/**
 * The audit log (docs/developers.md), newest first, a page at a time: `GET /v1/developer/audit-log`
 * shows the calling developer's own rows (theirs and those about them), `GET /v1/admin/audit-log`
 * every row, or one developer's with `?developer_id=`.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireAdmin } from '#shared/auth/require-admin.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { type AuditLogRow, listAuditLog } from '#shared/developers/list-audit-log.ts';
import { errorResponses } from '#shared/openapi.ts';
import { AuditLogEntrySchema, PageQuery } from './developer-schemas.ts';

const AuditLogPage = z.object({ data: z.array(AuditLogEntrySchema), next_cursor: z.string().nullable() }).openapi('AuditLogPage');
const ok = { 200: { description: 'Audit rows', content: { 'application/json': { schema: AuditLogPage } } } };

const developerLog = createRoute({
  method: 'get',
  path: '/v1/developer/audit-log',
  summary: 'Your audit log: changes you made and changes made to your account',
  middleware: [requireDeveloper()] as const,
  request: { query: PageQuery },
  responses: { ...ok, ...errorResponses(400, 401, 403, 429) },
});

const adminLog = createRoute({
  method: 'get',
  path: '/v1/admin/audit-log',
  summary: 'The whole audit log, or one developer’s',
  middleware: [requireAdmin()] as const,
  request: { query: PageQuery.extend({ developer_id: z.uuid().optional() }) },
  responses: { ...ok, ...errorResponses(400, 401, 429) },
});

const toEntry = (row: AuditLogRow) => ({
  id: row.id.toString(),
  actor_type: row.actorType,
  actor_id: row.actorId,
  action: row.action,
  target_type: row.targetType,
  target_id: row.targetId,
  request_id: row.requestId,
  metadata: row.metadata,
  created_at: row.createdAt.toISOString(),
});

export function registerAuditLogRoutes(app: ServiceApp): void {
  app.openapi(developerLog, async (c) => {
    const query = c.req.valid('query');
    const page = await listAuditLog(c.var.database().db, {
      developerId: c.var.developer.developerId,
      limit: query.limit ?? 20,
      cursor: query.cursor,
    });
    return c.json({ data: page.rows.map(toEntry), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(adminLog, async (c) => {
    const query = c.req.valid('query');
    const page = await listAuditLog(c.var.database().db, {
      developerId: query.developer_id,
      limit: query.limit ?? 20,
      cursor: query.cursor,
    });
    return c.json({ data: page.rows.map(toEntry), next_cursor: page.nextCursor }, 200);
  });
}
