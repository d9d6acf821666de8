/**
 * The calling developer's own provider keys, used for their apps' calls before the platform pool:
 * `POST/GET /v1/developer/provider-keys`, `DELETE /v1/developer/provider-keys/{id}`. Each key has a
 * monthly budget on its recorded upstream cost. A developer sees and disables only their own keys.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { pushAppChange, pushDeveloperKeyDisabled } from '#shared/wallet/wallet-notices.ts';
import { parseWireAmount } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';
import { createProviderKey } from '#shared/provider-keys/create-provider-key.ts';
import { disableProviderKey } from '#shared/provider-keys/disable-provider-key.ts';
import { listProviderKeys } from '#shared/provider-keys/list-provider-keys.ts';
import type { KeyOwner } from '#shared/provider-keys/owner.ts';
import { toDeveloperView } from '#shared/provider-keys/provider-key-view.ts';
import { CreateDeveloperProviderKeyBody, DeveloperProviderKeySchema, ProviderKeyIdParam } from '#shared/provider-keys/wire-schemas.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const createKey = createRoute({
  method: 'post',
  path: '/v1/developer/provider-keys',
  summary: 'Add a developer key for a provider with a monthly budget (stored encrypted; shown masked)',
  middleware: [requireDeveloper()] as const,
  request: { body: { required: true, content: json(CreateDeveloperProviderKeyBody) } },
  responses: {
    201: { description: 'Key stored', content: json(DeveloperProviderKeySchema) },
    ...errorResponses(400, 401, 409, 413, 429, 502),
  },
});

const listKeys = createRoute({
  method: 'get',
  path: '/v1/developer/provider-keys',
  summary: "The developer's provider keys with budget and this month's spend, newest first",
  middleware: [requireDeveloper()] as const,
  responses: {
    200: { description: 'Keys', content: json(z.object({ data: z.array(DeveloperProviderKeySchema) })) },
    ...errorResponses(401, 429),
  },
});

const disableKey = createRoute({
  method: 'delete',
  path: '/v1/developer/provider-keys/{id}',
  summary: 'Disable one of your provider keys (idempotent; the key is never used again)',
  middleware: [requireDeveloper()] as const,
  request: { params: ProviderKeyIdParam },
  responses: { 200: { description: 'Key disabled', content: json(DeveloperProviderKeySchema) }, ...errorResponses(401, 404, 429) },
});

export function registerDeveloperProviderKeyRoutes(app: ServiceApp, options: { fetch?: FetchFunction } = {}): void {
  const fetchForLiveCheck = options.fetch ?? ((request: Request) => fetch(request));
  const ownerOf = (developerId: string): KeyOwner => ({ type: 'developer', developerId });

  app.openapi(createKey, async (c) => {
    const body = c.req.valid('json');
    const row = await createProviderKey(
      c.var.database().db,
      {
        owner: ownerOf(c.var.developer.developerId),
        provider: body.provider,
        apiKey: body.api_key,
        label: body.label ?? null,
        baseUrl: body.base_url,
        monthlyBudgetUsd: parseWireAmount(body.monthly_budget_usd, { field: 'monthly_budget_usd' }),
        requestId: c.var.requestId,
      },
      { env: c.env, fetch: fetchForLiveCheck },
    );
    // The developer's end users' next calls may take the new key (DESIGN §6): their wallet objects read their context again.
    await pushAppChange(c.env, c.var.database().db, { developerId: c.var.developer.developerId }, c.var.logger);
    return c.json(toDeveloperView(row), 201);
  });

  app.openapi(listKeys, async (c) => {
    const rows = await listProviderKeys(c.var.database().db, ownerOf(c.var.developer.developerId));
    return c.json({ data: rows.map(toDeveloperView) }, 200);
  });

  app.openapi(disableKey, async (c) => {
    const { db } = c.var.database();
    const row = await disableProviderKey(db, ownerOf(c.var.developer.developerId), c.req.valid('param').id, c.var.requestId);
    // Disabled in Postgres first: the wallet objects holding part of its budget, and those of the
    // developer's end users that leased in the last minute, read their calls' context again (never this key).
    await pushDeveloperKeyDisabled(c.env, db, row.id, c.var.logger);
    await pushAppChange(c.env, db, { developerId: c.var.developer.developerId }, c.var.logger);
    return c.json(toDeveloperView(row), 200);
  });
}
