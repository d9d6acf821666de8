import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireAdmin } from '#shared/auth/require-admin.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { ClawbackSchema, clawbackStatuses, findClawback, listClawbacks } from '#shared/ledger/find-clawbacks.ts';
import { reverseClawback } from '#shared/ledger/reverse-clawback.ts';
import { errorResponses } from '#shared/openapi.ts';

const ClawbackList = z.object({ data: z.array(ClawbackSchema) }).openapi('RevenueClawbackList');
const json = <T extends z.ZodType>(schema: T) => ({ content: { 'application/json': { schema } } });

const list = createRoute({
  method: 'get',
  path: '/v1/admin/clawbacks',
  summary: 'Developer revenue clawed back after chargebacks and refunds of spent money, newest first, for review',
  middleware: [requireAdmin()] as const,
  request: {
    query: z.object({
      status: z.enum(clawbackStatuses).optional(),
      developer_id: z.uuid().optional(),
      limit: z.coerce.number().int().min(1).max(500).default(100),
    }),
  },
  responses: { 200: { description: 'Clawbacks', ...json(ClawbackList) }, ...errorResponses(400, 401, 429) },
});

const reverse = createRoute({
  method: 'post',
  path: '/v1/admin/clawbacks/{id}/reverse',
  summary: 'Credit a clawback back to the developer (the review found it wrong), audited with the note; repeating it is a no-op',
  middleware: [requireAdmin()] as const,
  request: {
    params: z.object({ id: z.string() }),
    body: { required: true, ...json(z.strictObject({ note: z.string().trim().min(1).max(1000) }).openapi('ReverseClawbackRequest')) },
  },
  responses: { 200: { description: 'Reversed (now or before)', ...json(ClawbackSchema) }, ...errorResponses(400, 401, 404, 429) },
});

export function registerAdminClawbackRoutes(app: ServiceApp): void {
  app.openapi(list, async (c) => {
    const { status, developer_id: developerId, limit } = c.req.valid('query');
    const data = await listClawbacks(c.var.database().db, {
      ...(status ? { status } : {}),
      ...(developerId ? { developerId } : {}),
      limit,
    });
    return c.json({ data }, 200);
  });

  app.openapi(reverse, async (c) => {
    const { id } = c.req.valid('param');
    const { db } = c.var.database();
    const outcome = await reverseClawback(db, { clawbackId: id, note: c.req.valid('json').note, requestId: c.var.requestId });
    if (outcome === 'not_found') throw new FaucetError('not_found', 'clawback not found');
    const clawback = await findClawback(db, id);
    if (!clawback) throw new FaucetError('not_found', 'clawback not found');
    return c.json(clawback, 200);
  });
}
