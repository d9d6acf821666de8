/**
 * Signed events out (docs/webhooks.md), set by the developer only:
 * - `/v1/developer/webhooks` — endpoints: create (the signing secret shown once), list, read, change,
 *   delete, rotate the secret (the previous one keeps signing through an overlap);
 * - `/v1/developer/webhooks/{id}/deliveries` — the delivery log, one delivery with its attempts and
 *   payload, and resend.
 * The app's low-balance threshold is set in developer-app-alerts.ts.
 * Another developer's endpoint or delivery answers exactly like one that does not exist (404).
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import type { Env } from '#shared/env.ts';
import { errorResponses } from '#shared/openapi.ts';
import { publicEndpointUrl } from '#shared/upstream/public-endpoint.ts';
import { type DeliveryRow, findDelivery, listDeliveries, markForResend } from '#shared/webhooks/deliveries.ts';
import {
  createEndpoint,
  deleteEndpoint,
  type EndpointRow,
  findEndpoint,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
} from '#shared/webhooks/endpoints.ts';
import { subscribableEventTypes } from '#shared/webhooks/event-types.ts';
import { queueDeliveries } from '#shared/webhooks/relay.ts';
import { relayTarget } from '../webhook-relay.ts';
import { renderEvent } from '#shared/webhooks/render-event.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { PageQuery } from './developer-schemas.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });
const dateTime = z.string().openapi({ format: 'date-time' });

/** Endpoints a developer may keep at once. */
const maxEndpoints = 16;
const defaultOverlapSeconds = 24 * 3600;
const maxOverlapSeconds = 7 * 24 * 3600;

const EventTypes = z
  .array(z.enum(subscribableEventTypes as [string, ...string[]]))
  .min(1)
  .max(subscribableEventTypes.length)
  .openapi({ description: 'The event types delivered here; `*` for all (docs/webhooks.md)' });
const Url = z.string().max(2048).openapi({ description: 'An https URL on a public host (http only for the local stack)' });
const Description = z.string().trim().max(200).nullable();

const CreateBody = z
  .object({ url: Url, event_types: EventTypes, description: Description.optional(), enabled: z.boolean().optional() })
  .strict()
  .openapi('WebhookEndpointCreateRequest');
const UpdateBody = z
  .object({ url: Url.optional(), event_types: EventTypes.optional(), description: Description.optional(), enabled: z.boolean().optional() })
  .strict()
  .openapi('WebhookEndpointUpdateRequest');
const RotateBody = z
  .object({
    overlap_seconds: z
      .number()
      .int()
      .min(0)
      .max(maxOverlapSeconds)
      .optional()
      .openapi({ description: 'How long the previous secret keeps signing beside the new one (default 86400; 0: stops at once)' }),
  })
  .strict()
  .openapi('WebhookSecretRotateRequest');

const EndpointSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    event_types: z.array(z.string()),
    enabled: z.boolean(),
    secret_hint: z.string().openapi({ description: 'whsec_… and the secret’s last four characters' }),
    previous_secret_expires_at: dateTime.nullable().openapi({ description: 'Set during a rotation: the previous secret signs until then' }),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .openapi('WebhookEndpoint');
const EndpointWithSecret = EndpointSchema.extend({
  secret: z.string().openapi({ description: 'The signing secret (whsec_…): shown this once, store it now' }),
}).openapi('WebhookEndpointWithSecret');

const EventSchema = z
  .object({ id: z.string(), type: z.string(), created_at: dateTime, data: z.record(z.string(), z.unknown()) })
  .openapi('WebhookEvent');
const DeliverySchema = z
  .object({
    id: z.string(),
    endpoint_id: z.string(),
    event: EventSchema.pick({ id: true, type: true, created_at: true }),
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int(),
    next_attempt_at: dateTime.nullable().openapi({ description: 'When a pending delivery is tried next' }),
    last_attempt_at: dateTime.nullable(),
    last_status: z.number().int().nullable().openapi({ description: "The endpoint's last HTTP status (null: no answer)" }),
    last_error: z.string().nullable(),
    delivered_at: dateTime.nullable(),
    created_at: dateTime,
  })
  .openapi('WebhookDelivery');
const DeliveryDetail = DeliverySchema.extend({
  payload: EventSchema.openapi({ description: 'The body sent (signed as docs/webhooks.md says)' }),
  attempt_log: z.array(
    z.object({
      attempted_at: dateTime,
      status_code: z.number().int().nullable(),
      error: z.string().nullable(),
      duration_ms: z.number().int(),
    }),
  ),
}).openapi('WebhookDeliveryDetail');

const IdParam = z.object({ id: z.uuid().openapi({ description: 'The endpoint id' }) });
const DeliveryParam = IdParam.extend({ delivery_id: z.uuid() });
const DeliveriesQuery = PageQuery.extend({ status: z.enum(['pending', 'delivered', 'failed']).optional() });

const base = '/v1/developer/webhooks';

const createEndpointRoute = createRoute({
  method: 'post',
  path: base,
  summary: 'Add a webhook endpoint: Faucet signs and sends it the events it subscribes to (the secret is shown once)',
  middleware: [requireDeveloper()] as const,
  request: { body: { required: true, content: json(CreateBody) } },
  responses: { 201: { description: 'Created', content: json(EndpointWithSecret) }, ...errorResponses(400, 401, 403, 409, 413, 429) },
});
const listEndpointsRoute = createRoute({
  method: 'get',
  path: base,
  summary: 'Your webhook endpoints',
  middleware: [requireDeveloper()] as const,
  responses: {
    200: { description: 'Endpoints', content: json(z.object({ data: z.array(EndpointSchema) }).openapi('WebhookEndpointList')) },
    ...errorResponses(401, 403, 429),
  },
});
const getEndpointRoute = createRoute({
  method: 'get',
  path: `${base}/{id}`,
  summary: 'One webhook endpoint',
  middleware: [requireDeveloper()] as const,
  request: { params: IdParam },
  responses: { 200: { description: 'The endpoint', content: json(EndpointSchema) }, ...errorResponses(400, 401, 403, 404, 429) },
});
const updateEndpointRoute = createRoute({
  method: 'patch',
  path: `${base}/{id}`,
  summary: "Change a webhook endpoint's URL, event types, description or enabled",
  middleware: [requireDeveloper()] as const,
  request: { params: IdParam, body: { required: true, content: json(UpdateBody) } },
  responses: { 200: { description: 'Changed', content: json(EndpointSchema) }, ...errorResponses(400, 401, 403, 404, 413, 429) },
});
const deleteEndpointRoute = createRoute({
  method: 'delete',
  path: `${base}/{id}`,
  summary: 'Delete a webhook endpoint: nothing more is sent to it',
  middleware: [requireDeveloper()] as const,
  request: { params: IdParam },
  responses: {
    200: {
      description: 'Deleted',
      content: json(z.object({ id: z.string(), deleted: z.literal(true) }).openapi('WebhookEndpointDeleted')),
    },
    ...errorResponses(400, 401, 403, 404, 429),
  },
});
const rotateRoute = createRoute({
  method: 'post',
  path: `${base}/{id}/rotate-secret`,
  summary: 'A new signing secret (shown once); the previous one keeps signing through the overlap',
  middleware: [requireDeveloper()] as const,
  request: { params: IdParam, body: { required: false, content: json(RotateBody) } },
  responses: { 200: { description: 'Rotated', content: json(EndpointWithSecret) }, ...errorResponses(400, 401, 403, 404, 413, 429) },
});
const listDeliveriesRoute = createRoute({
  method: 'get',
  path: `${base}/{id}/deliveries`,
  summary: "The endpoint's delivery log, newest first (keyset pages)",
  middleware: [requireDeveloper()] as const,
  request: { params: IdParam, query: DeliveriesQuery },
  responses: {
    200: {
      description: 'Deliveries',
      content: json(z.object({ data: z.array(DeliverySchema), next_cursor: z.string().nullable() }).openapi('WebhookDeliveryPage')),
    },
    ...errorResponses(400, 401, 403, 404, 429),
  },
});
const getDeliveryRoute = createRoute({
  method: 'get',
  path: `${base}/{id}/deliveries/{delivery_id}`,
  summary: 'One delivery: its payload and each attempt',
  middleware: [requireDeveloper()] as const,
  request: { params: DeliveryParam },
  responses: { 200: { description: 'The delivery', content: json(DeliveryDetail) }, ...errorResponses(400, 401, 403, 404, 429) },
});
const resendRoute = createRoute({
  method: 'post',
  path: `${base}/{id}/deliveries/{delivery_id}/resend`,
  summary: 'Send a delivery again now (same event id): a delivered or failed one starts its attempts again, a pending one is tried now',
  middleware: [requireDeveloper()] as const,
  request: { params: DeliveryParam },
  responses: { 202: { description: 'Queued', content: json(DeliverySchema) }, ...errorResponses(400, 401, 403, 404, 429) },
});
const isoOf = (value: Date | string | null): string | null => (value === null ? null : new Date(value).toISOString());

function endpointView(row: EndpointRow): z.infer<typeof EndpointSchema> {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    event_types: row.event_types,
    enabled: row.enabled,
    secret_hint: `whsec_…${row.secret_hint}`,
    // An overlap that has ended is no longer shown (the column is cleared by the next rotation).
    previous_secret_expires_at:
      row.previous_secret_expires_at !== null && new Date(row.previous_secret_expires_at) > new Date()
        ? isoOf(row.previous_secret_expires_at)
        : null,
    created_at: isoOf(row.created_at)!,
    updated_at: isoOf(row.updated_at)!,
  };
}

function deliveryView(row: DeliveryRow): z.infer<typeof DeliverySchema> {
  return {
    id: row.id,
    endpoint_id: row.endpoint_id,
    event: { id: row.event.id, type: row.event.type, created_at: row.event.created_at },
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    last_attempt_at: row.last_attempt_at,
    last_status: row.last_status,
    last_error: row.last_error,
    delivered_at: row.delivered_at,
    created_at: `${row.created_at.slice(0, 23)}Z`,
  };
}

/** Event types as stored: each once, `*` alone when it is named. */
function eventTypesOf(types: string[]): string[] {
  return types.includes('*') ? ['*'] : [...new Set(types)];
}

const unknownEndpoint = () => new FaucetError('not_found', 'Unknown webhook endpoint');
const unknownDelivery = () => new FaucetError('not_found', 'Unknown delivery');

const webhookUrl = (url: string, env: Env) => publicEndpointUrl(url, env, 'url');

export function registerDeveloperWebhookRoutes(app: ServiceApp): void {
  app.openapi(createEndpointRoute, async (c) => {
    const body = c.req.valid('json');
    const developerId = c.var.developer.developerId;
    const { db } = c.var.database();
    const url = webhookUrl(body.url, c.env);
    if ((await listEndpoints(db, developerId)).length >= maxEndpoints) {
      throw new FaucetError('conflict', `At most ${maxEndpoints} webhook endpoints: delete one first`);
    }
    const { endpoint, secret } = await createEndpoint(db, c.env, {
      developerId,
      url,
      description: body.description ?? null,
      eventTypes: eventTypesOf(body.event_types),
      enabled: body.enabled ?? true,
      requestId: c.var.requestId,
    });
    return c.json({ ...endpointView(endpoint), secret }, 201);
  });

  app.openapi(listEndpointsRoute, async (c) => {
    const { db } = c.var.database();
    const rows = await listEndpoints(db, c.var.developer.developerId);
    return c.json({ data: rows.map(endpointView) }, 200);
  });

  app.openapi(getEndpointRoute, async (c) => {
    const { db } = c.var.database();
    const row = await findEndpoint(db, c.var.developer.developerId, c.req.valid('param').id);
    if (row === undefined) throw unknownEndpoint();
    return c.json(endpointView(row), 200);
  });

  app.openapi(updateEndpointRoute, async (c) => {
    const body = c.req.valid('json');
    if (Object.keys(body).length === 0)
      throw new FaucetError('invalid_request', 'Nothing to change: give url, event_types, description or enabled');
    const { db } = c.var.database();
    const row = await updateEndpoint(
      db,
      c.var.developer.developerId,
      c.req.valid('param').id,
      {
        ...(body.url === undefined ? {} : { url: webhookUrl(body.url, c.env) }),
        ...(body.event_types === undefined ? {} : { eventTypes: eventTypesOf(body.event_types) }),
        ...(body.description === undefined ? {} : { description: body.description }),
        ...(body.enabled === undefined ? {} : { enabled: body.enabled }),
      },
      c.var.requestId,
    );
    if (row === undefined) throw unknownEndpoint();
    return c.json(endpointView(row), 200);
  });

  app.openapi(deleteEndpointRoute, async (c) => {
    const { db } = c.var.database();
    const id = c.req.valid('param').id;
    if (!(await deleteEndpoint(db, c.var.developer.developerId, id, c.var.requestId))) throw unknownEndpoint();
    return c.json({ id, deleted: true as const }, 200);
  });

  app.openapi(rotateRoute, async (c) => {
    const body = (c.req.header('content-type') ?? '').includes('json') ? c.req.valid('json') : {};
    const { db } = c.var.database();
    const rotated = await rotateSecret(
      db,
      c.env,
      c.var.developer.developerId,
      c.req.valid('param').id,
      body.overlap_seconds ?? defaultOverlapSeconds,
      c.var.requestId,
    );
    if (rotated === undefined) throw unknownEndpoint();
    return c.json({ ...endpointView(rotated.endpoint), secret: rotated.secret }, 200);
  });

  app.openapi(listDeliveriesRoute, async (c) => {
    const query = c.req.valid('query');
    const developerId = c.var.developer.developerId;
    const endpointId = c.req.valid('param').id;
    const { db } = c.var.database();
    if ((await findEndpoint(db, developerId, endpointId)) === undefined) throw unknownEndpoint();
    const page = await listDeliveries(db, {
      developerId,
      endpointId,
      status: query.status,
      limit: query.limit ?? 20,
      cursor: query.cursor,
    });
    return c.json({ data: page.rows.map(deliveryView), next_cursor: page.nextCursor }, 200);
  });

  app.openapi(getDeliveryRoute, async (c) => {
    const { id: endpointId, delivery_id: deliveryId } = c.req.valid('param');
    const { db } = c.var.database();
    const row = await findDelivery(db, { developerId: c.var.developer.developerId, endpointId, deliveryId });
    if (row === undefined) throw unknownDelivery();
    return c.json({ ...deliveryView(row), payload: await renderEvent(c.env, row.event), attempt_log: row.attempt_log }, 200);
  });

  app.openapi(resendRoute, async (c) => {
    const { id: endpointId, delivery_id: deliveryId } = c.req.valid('param');
    const developerId = c.var.developer.developerId;
    const { db } = c.var.database();
    if (!(await markForResend(db, { developerId, endpointId, deliveryId }))) throw unknownDelivery();
    // Read before it is queued: the answer is the delivery as queued, not as the consumer may have moved it.
    const row = await findDelivery(db, { developerId, endpointId, deliveryId });
    if (row === undefined) throw unknownDelivery();
    await queueDeliveries(relayTarget(c.env), [deliveryId]);
    return c.json(deliveryView(row), 202);
  });
}
