/**
 * BYOK keys of the session's end user: `POST/GET /v1/user/provider-keys`,
 * `DELETE /v1/user/provider-keys/{id}`. A user sees and disables only their own keys.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireSession } from '#shared/auth/require-session.ts';
import { pushKeyChange } from '#shared/wallet/wallet-notices.ts';
import { errorResponses } from '#shared/openapi.ts';
import { createProviderKey } from '#shared/provider-keys/create-provider-key.ts';
import { disableProviderKey } from '#shared/provider-keys/disable-provider-key.ts';
import { listProviderKeys } from '#shared/provider-keys/list-provider-keys.ts';
import type { KeyOwner } from '#shared/provider-keys/owner.ts';
import { toView } from '#shared/provider-keys/provider-key-view.ts';
import { CreateUserProviderKeyBody, ProviderKeyIdParam, ProviderKeySchema } from '#shared/provider-keys/wire-schemas.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const createKey = createRoute({
  method: 'post',
  path: '/v1/user/provider-keys',
  summary: 'Add a BYOK key for a provider (stored encrypted; the response shows it masked)',
  middleware: [requireSession()] as const,
  request: { body: { required: true, content: json(CreateUserProviderKeyBody) } },
  responses: { 201: { description: 'Key stored', content: json(ProviderKeySchema) }, ...errorResponses(400, 401, 409, 413, 429, 502) },
});

const listKeys = createRoute({
  method: 'get',
  path: '/v1/user/provider-keys',
  summary: "The session user's BYOK keys, active and disabled, newest first",
  middleware: [requireSession()] as const,
  responses: { 200: { description: 'Keys', content: json(z.object({ data: z.array(ProviderKeySchema) })) }, ...errorResponses(401, 429) },
});

const disableKey = createRoute({
  method: 'delete',
  path: '/v1/user/provider-keys/{id}',
  summary: 'Disable one of your BYOK keys (idempotent; the key is never used again)',
  middleware: [requireSession()] as const,
  request: { params: ProviderKeyIdParam },
  responses: { 200: { description: 'Key disabled', content: json(ProviderKeySchema) }, ...errorResponses(401, 404, 429) },
});

export function registerUserProviderKeyRoutes(app: ServiceApp, options: { fetch?: FetchFunction } = {}): void {
  const fetchForLiveCheck = options.fetch ?? ((request: Request) => fetch(request));
  const ownerOf = (endUserId: string): KeyOwner => ({ type: 'end_user', endUserId });

  app.openapi(createKey, async (c) => {
    const body = c.req.valid('json');
    const row = await createProviderKey(
      c.var.database().db,
      {
        owner: ownerOf(c.var.session.endUserId),
        provider: body.provider,
        apiKey: body.api_key,
        label: body.label ?? null,
        baseUrl: body.base_url,
        monthlyBudgetUsd: null,
        requestId: c.var.requestId,
      },
      { env: c.env, fetch: fetchForLiveCheck },
    );
    await pushKeyChange(c.env, c.var.session.endUserId, c.var.logger);
    return c.json(toView(row), 201);
  });

  app.openapi(listKeys, async (c) => {
    const rows = await listProviderKeys(c.var.database().db, ownerOf(c.var.session.endUserId));
    return c.json({ data: rows.map(toView) }, 200);
  });

  app.openapi(disableKey, async (c) => {
    const row = await disableProviderKey(c.var.database().db, ownerOf(c.var.session.endUserId), c.req.valid('param').id, c.var.requestId);
    // Disabled in Postgres first: the object then reads its calls' routing again (never this key).
    await pushKeyChange(c.env, c.var.session.endUserId, c.var.logger);
    return c.json(toView(row), 200);
  });
}
