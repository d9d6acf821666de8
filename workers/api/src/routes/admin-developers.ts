/**
 * The operator's developers (docs/developers.md): `POST /v1/admin/developers` onboards one (wallet
 * and first `fdk_` key, shown once), `GET` lists them a page at a time, `…/{id}/suspend` and
 * `…/unsuspend` stop and restart their apps' sessions and calls. Idempotent, audited.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireAdmin } from '#shared/auth/require-admin.ts';
import { createDeveloper } from '#shared/developers/create-developer.ts';
import { toDeveloperView } from '#shared/developers/developer-view.ts';
import { listDevelopers } from '#shared/developers/list-developers.ts';
import { setDeveloperSuspended } from '#shared/developers/suspend-developer.ts';
import { errorResponses } from '#shared/openapi.ts';
import { DeveloperSchema, PageQuery } from './developer-schemas.ts';
import { pushAppChange } from '#shared/wallet/wallet-notices.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });
const admin = { type: 'admin', id: null } as const;

const CreateDeveloperBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    email: z.email().max(320),
    payout_details_ref: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: 'A reference to payout details held elsewhere (never bank details themselves)' }),
  })
  .strict()
  .openapi('CreateDeveloperRequest');

const CreatedDeveloper = z
  .object({
    developer: DeveloperSchema,
    key: z.object({
      id: z.uuid(),
      api_key: z.string().openapi({ description: 'The first fdk_ key, shown this once' }),
    }),
  })
  .openapi('CreatedDeveloper');

const DeveloperIdParam = z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' } }) });

const create = createRoute({
  method: 'post',
  path: '/v1/admin/developers',
  summary: 'Onboard a developer: developer wallet and first fdk_ key (shown once)',
  middleware: [requireAdmin()] as const,
  request: { body: { required: true, content: json(CreateDeveloperBody) } },
  responses: { 201: { description: 'Developer created', content: json(CreatedDeveloper) }, ...errorResponses(400, 401, 409, 413, 429) },
});

const list = createRoute({
  method: 'get',
  path: '/v1/admin/developers',
  summary: 'Developers, newest first, a page at a time',
  middleware: [requireAdmin()] as const,
  request: { query: PageQuery },
  responses: {
    200: {
      description: 'Developers',
      content: json(z.object({ data: z.array(DeveloperSchema), next_cursor: z.string().nullable() }).openapi('DeveloperPage')),
    },
    ...errorResponses(400, 401, 429),
  },
});

const suspensionRoute = (action: 'suspend' | 'unsuspend') =>
  createRoute({
    method: 'post',
    path: `/v1/admin/developers/{id}/${action}`,
    summary:
      action === 'suspend'
        ? 'Suspend a developer: their keys get 403, their apps refuse new sessions and calls (idempotent)'
        : 'Lift a suspension (idempotent)',
    middleware: [requireAdmin()] as const,
    request: { params: DeveloperIdParam },
    responses: { 200: { description: 'The developer', content: json(DeveloperSchema) }, ...errorResponses(401, 404, 429) },
  });

export function registerAdminDeveloperRoutes(app: ServiceApp): void {
  app.openapi(create, async (c) => {
    const body = c.req.valid('json');
    const created = await createDeveloper(c.var.database().db, {
      name: body.name,
      email: body.email,
      payoutDetailsRef: body.payout_details_ref ?? null,
      actor: admin,
      requestId: c.var.requestId,
    });
    return c.json({ developer: toDeveloperView(created.developer), key: { id: created.keyId, api_key: created.key } }, 201);
  });

  app.openapi(list, async (c) => {
    const query = c.req.valid('query');
    const page = await listDevelopers(c.var.database().db, { limit: query.limit ?? 20, cursor: query.cursor });
    return c.json({ data: page.rows.map(toDeveloperView), next_cursor: page.nextCursor }, 200);
  });

  for (const action of ['suspend', 'unsuspend'] as const) {
    app.openapi(suspensionRoute(action), async (c) => {
      const { db } = c.var.database();
      const row = await setDeveloperSuspended(db, {
        developerId: c.req.valid('param').id,
        suspended: action === 'suspend',
        actor: admin,
        requestId: c.var.requestId,
      });
      await pushAppChange(c.env, db, { developerId: row.id }, c.var.logger);
      return c.json(toDeveloperView(row), 200);
    });
  }
}
