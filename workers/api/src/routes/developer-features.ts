/**
 * The features of a developer's app (docs/developers.md, "Apps and features"): what a call names in
 * `feature` (or gets as its app's default), its models, route policy, prices and output cap. Create,
 * list, read, update, archive — never delete. A price change applies to calls authorized after it.
 * Every change is audited; another developer's app is a 404.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { archiveFeature } from '#shared/apps/archive-feature.ts';
import { createFeature } from '#shared/apps/create-feature.ts';
import { featureBounds, routePolicies } from '#shared/apps/feature-settings.ts';
import { routingBounds } from '#shared/apps/model-routing.ts';
import { getOwnedFeature, toFeatureView } from '#shared/apps/feature-view.ts';
import { listFeatures } from '#shared/apps/list-features.ts';
import { FEATURE_KEY_PATTERN, maxNameLength } from '#shared/apps/names.ts';
import { updateFeature } from '#shared/apps/update-feature.ts';
import type { Db } from '#shared/db.ts';
import { wireAmountSchema } from '#shared/money/index.ts';
import { errorResponses } from '#shared/openapi.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { PublicAppIdParam } from '../identity/app-identity-view.ts';
import { PageQuery } from './developer-schemas.ts';
import { pushAppChange } from '#shared/wallet/wallet-notices.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const featureKey = z.string().regex(FEATURE_KEY_PATTERN, 'must be 1–64 of A-Z a-z 0-9 . _ -, starting with a letter or digit');
const modelName = z
  .string()
  .min(3)
  .max(200)
  .openapi({ description: 'A `provider:model` name of GET /v1/models', example: 'openai:gpt-4o-mini' });

/** Every setting, each optional: create requires name and default_model on top, update takes any subset. */
const settings = {
  name: z.string().trim().min(1).max(maxNameLength),
  default_model: modelName,
  allowed_models: z
    .array(modelName)
    .max(featureBounds.allowedModels)
    .openapi({ description: 'Models a call may use; empty = any. default_model must be among them when not empty' }),
  route_policy: z.enum(routePolicies).openapi({ description: 'DESIGN §6: platform_first (default) or byok_first' }),
  developer_price_per_mtok_usd: wireAmountSchema
    .nullable()
    .openapi({ description: 'Price per million tokens on the developer_key route; null = upstream cost' }),
  open_fee_usd: wireAmountSchema.openapi({ description: 'Fee per call on the byok and local routes, shown openly (default 0)' }),
  max_output_tokens: z.number().int().min(1).max(featureBounds.maxOutputTokens).nullable(),
  model_aliases: z.record(z.string().max(64), modelName).openapi({
    description:
      'Alias name (1-24 of a-z and _) → `provider:model`: a call may send the alias as `model` (docs/models.md, "Fallback and aliases"). Targets must be among allowed_models when it is not empty',
    example: { fast: 'openai:gpt-4o-mini', smart: 'anthropic:claude-3-5-sonnet-latest' },
  }),
  fallback_models: z.array(modelName).max(routingBounds.fallbacks).openapi({
    description:
      "Models tried in order when the call's model fails before its first byte (connect error, timeout, 429, 5xx); at most 3, each among allowed_models when it is not empty",
  }),
};

const CreateFeatureBody = z
  .object({
    feature_key: featureKey,
    name: settings.name,
    default_model: settings.default_model,
    allowed_models: settings.allowed_models.optional(),
    route_policy: settings.route_policy.optional(),
    developer_price_per_mtok_usd: settings.developer_price_per_mtok_usd.optional(),
    open_fee_usd: settings.open_fee_usd.optional(),
    max_output_tokens: settings.max_output_tokens.optional(),
    model_aliases: settings.model_aliases.optional(),
    fallback_models: settings.fallback_models.optional(),
  })
  .strict()
  .openapi('CreateFeatureRequest');

const UpdateFeatureBody = z
  .object(
    Object.fromEntries(Object.entries(settings).map(([key, schema]) => [key, schema.optional()])) as {
      [K in keyof typeof settings]: z.ZodOptional<(typeof settings)[K]>;
    },
  )
  .strict()
  .openapi('UpdateFeatureRequest');

const FeatureSchema = z
  .object({
    feature_key: z.string(),
    name: z.string(),
    default_model: z.string(),
    allowed_models: z.array(z.string()),
    route_policy: z.enum(routePolicies),
    developer_price_per_mtok_usd: z.string().nullable(),
    open_fee_usd: z.string(),
    max_output_tokens: z.number().int().nullable(),
    model_aliases: z.record(z.string(), z.string()),
    fallback_models: z.array(z.string()),
    is_default: z.boolean().openapi({ description: "The app's default feature (what a call without `feature` uses)" }),
    created_at: z.string().openapi({ format: 'date-time' }),
    updated_at: z.string().openapi({ format: 'date-time' }),
    archived_at: z.string().nullable().openapi({ description: 'Set: calls naming it are refused; it takes no change' }),
  })
  .openapi('Feature');

const FeatureParams = PublicAppIdParam.extend({ feature_key: featureKey });
const FeaturePageQuery = PageQuery.extend({ cursor: featureKey.optional().openapi({ description: 'next_cursor of the previous page' }) });

const base = '/v1/developer/apps/{public_app_id}/features';
const create = createRoute({
  method: 'post',
  path: base,
  summary: "Create a feature (the app's first becomes its default)",
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam, body: { required: true, content: json(CreateFeatureBody) } },
  responses: { 201: { description: 'Created', content: json(FeatureSchema) }, ...errorResponses(400, 401, 403, 404, 409, 413, 429) },
});
const list = createRoute({
  method: 'get',
  path: base,
  summary: "The app's features, newest first (live and archived)",
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam, query: FeaturePageQuery },
  responses: {
    200: { description: 'Features', content: json(z.object({ data: z.array(FeatureSchema), next_cursor: z.string().nullable() })) },
    ...errorResponses(400, 401, 403, 404, 429),
  },
});
const read = createRoute({
  method: 'get',
  path: `${base}/{feature_key}`,
  summary: 'One feature',
  middleware: [requireDeveloper()] as const,
  request: { params: FeatureParams },
  responses: { 200: { description: 'The feature', content: json(FeatureSchema) }, ...errorResponses(400, 401, 403, 404, 429) },
});
const update = createRoute({
  method: 'patch',
  path: `${base}/{feature_key}`,
  summary: 'Change settings; a price change applies to calls authorized after it',
  middleware: [requireDeveloper()] as const,
  request: { params: FeatureParams, body: { required: true, content: json(UpdateFeatureBody) } },
  responses: { 200: { description: 'Updated', content: json(FeatureSchema) }, ...errorResponses(400, 401, 403, 404, 409, 413, 429) },
});
const archive = createRoute({
  method: 'post',
  path: `${base}/{feature_key}/archive`,
  summary: "Archive a feature (idempotent; not the app's default): calls naming it are refused",
  middleware: [requireDeveloper()] as const,
  request: { params: FeatureParams },
  responses: { 200: { description: 'Archived', content: json(FeatureSchema) }, ...errorResponses(400, 401, 403, 404, 409, 429) },
});

export function registerDeveloperFeatureRoutes(app: ServiceApp): void {
  const view = async (db: Db, developerId: string, publicAppId: string, featureKey: string) => {
    const found = await getOwnedFeature(db, { developerId, publicAppId, featureKey });
    return toFeatureView(found.feature, found.appDefaultFeatureKey);
  };

  app.openapi(create, async (c) => {
    const developerId = c.var.developer.developerId;
    const publicAppId = c.req.valid('param').public_app_id;
    const { db } = c.var.database();
    const created = await createFeature(db, {
      developerId,
      publicAppId,
      feature: c.req.valid('json'),
      actor: { type: 'developer', id: developerId },
      requestId: c.var.requestId,
    });
    // A new default feature changes what a call naming none is served with.
    await pushAppChange(c.env, db, { publicAppId }, c.var.logger);
    return c.json(await view(db, developerId, publicAppId, created.featureKey), 201);
  });

  app.openapi(list, async (c) => {
    const query = c.req.valid('query');
    const page = await listFeatures(c.var.database().db, {
      developerId: c.var.developer.developerId,
      publicAppId: c.req.valid('param').public_app_id,
      limit: query.limit ?? 20,
      cursor: query.cursor,
    });
    const data = page.rows.map((feature) => toFeatureView(feature, page.appDefaultFeatureKey));
    return c.json({ data, next_cursor: page.nextCursor }, 200);
  });

  app.openapi(read, async (c) => {
    const { public_app_id, feature_key } = c.req.valid('param');
    return c.json(await view(c.var.database().db, c.var.developer.developerId, public_app_id, feature_key), 200);
  });

  app.openapi(update, async (c) => {
    const developerId = c.var.developer.developerId;
    const { public_app_id: publicAppId, feature_key: featureKey } = c.req.valid('param');
    const { db } = c.var.database();
    const actor = { type: 'developer', id: developerId } as const;
    await updateFeature(db, { developerId, publicAppId, featureKey, changes: c.req.valid('json'), actor, requestId: c.var.requestId });
    await pushAppChange(c.env, db, { publicAppId }, c.var.logger);
    return c.json(await view(db, developerId, publicAppId, featureKey), 200);
  });

  app.openapi(archive, async (c) => {
    const developerId = c.var.developer.developerId;
    const { public_app_id: publicAppId, feature_key: featureKey } = c.req.valid('param');
    const { db } = c.var.database();
    await archiveFeature(db, {
      developerId,
      publicAppId,
      featureKey,
      actor: { type: 'developer', id: developerId },
      requestId: c.var.requestId,
    });
    await pushAppChange(c.env, db, { publicAppId }, c.var.logger);
    return c.json(await view(db, developerId, publicAppId, featureKey), 200);
  });
}
