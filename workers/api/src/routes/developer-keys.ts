/**
 * A developer's own `fdk_` keys (docs/developers.md): create (the key shown once), list (prefix,
 * label, dates; never the key or its hash), revoke (401 from the next request on). Several keys
 * live at a time, so rotating is create → deploy → revoke the old one. Audited.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { createDeveloperKey } from '#shared/developers/create-developer-key.ts';
import { toDeveloperKeyView } from '#shared/developers/developer-view.ts';
import { listDeveloperKeys } from '#shared/developers/list-developer-keys.ts';
import { revokeDeveloperKey } from '#shared/developers/revoke-developer-key.ts';
import { errorResponses } from '#shared/openapi.ts';
import { DeveloperKeySchema } from './developer-schemas.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const CreateKeyBody = z
  .object({ label: z.string().trim().min(1).max(100).optional() })
  .strict()
  .openapi('CreateDeveloperKeyRequest');

const CreatedKey = DeveloperKeySchema.extend({
  api_key: z.string().openapi({ description: 'The fdk_ key, shown this once' }),
}).openapi('CreatedDeveloperKey');

const create = createRoute({
  method: 'post',
  path: '/v1/developer/keys',
  summary: 'Create a developer key (shown once); older keys stay live until revoked',
  middleware: [requireDeveloper()] as const,
  request: { body: { required: false, content: json(CreateKeyBody) } },
  responses: { 201: { description: 'Key created', content: json(CreatedKey) }, ...errorResponses(400, 401, 403, 409, 413, 429) },
});

const list = createRoute({
  method: 'get',
  path: '/v1/developer/keys',
  summary: 'Your developer keys, newest first (live and revoked)',
  middleware: [requireDeveloper()] as const,
  responses: {
    200: { description: 'Keys', content: json(z.object({ data: z.array(DeveloperKeySchema) })) },
    ...errorResponses(401, 403, 429),
  },
});

const revoke = createRoute({
  method: 'post',
  path: '/v1/developer/keys/{id}/revoke',
  summary: 'Revoke one of your keys (idempotent; not your last live key)',
  middleware: [requireDeveloper()] as const,
  request: { params: z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' } }) }) },
  responses: { 200: { description: 'Key revoked', content: json(DeveloperKeySchema) }, ...errorResponses(401, 403, 404, 409, 429) },
});

export function registerDeveloperKeyRoutes(app: ServiceApp): void {
  app.openapi(create, async (c) => {
    const developerId = c.var.developer.developerId;
    const body = c.req.valid('json') ?? {};
    const created = await createDeveloperKey(c.var.database().db, {
      developerId,
      label: body.label ?? null,
      actor: { type: 'developer', id: developerId },
      requestId: c.var.requestId,
    });
    return c.json({ ...toDeveloperKeyView(created.row), api_key: created.key }, 201);
  });

  app.openapi(list, async (c) => {
    const rows = await listDeveloperKeys(c.var.database().db, c.var.developer.developerId);
    return c.json({ data: rows.map(toDeveloperKeyView) }, 200);
  });

  app.openapi(revoke, async (c) => {
    const developerId = c.var.developer.developerId;
    const row = await revokeDeveloperKey(c.var.database().db, {
      developerId,
      keyId: c.req.valid('param').id,
      actor: { type: 'developer', id: developerId },
      requestId: c.var.requestId,
    });
    return c.json(toDeveloperKeyView(row), 200);
  });
}
