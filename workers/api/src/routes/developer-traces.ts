/**
 * Where an app's calls are traced to (docs/traces.md), set by the app's developer only:
 * `PUT|GET|DELETE /v1/developer/apps/{public_app_id}/traces`. The endpoint passes the outbound
 * fetch's address guard (https in production); the headers are sealed and only ever shown masked.
 * GET also tells how the last deliveries went.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from '#shared/app.ts';
import { requireDeveloper } from '#shared/auth/require-developer.ts';
import { errorResponses } from '#shared/openapi.ts';
import { deleteTraceExport, findTraceExport, saveTraceExport, traceEndpointFor, type TraceExportRow } from '#shared/traces/trace-export.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { ownedApp, PublicAppIdParam } from '../identity/app-identity-view.ts';

const json = <T>(schema: T) => ({ 'application/json': { schema } });

const maxHeaders = 20;
/** Headers the delivery sets itself (or the runtime does). */
const reservedHeaders = new Set(['content-type', 'content-length', 'host', 'transfer-encoding', 'connection', 'content-encoding']);

const HeaderName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/, 'must be an HTTP header name');
const HeaderValue = z
  .string()
  .min(1)
  .max(4096)
  .regex(/^[\x20-\x7e]+$/, 'must be printable ASCII on one line');

const TraceExportBody = z
  .object({
    endpoint: z
      .string()
      .max(2048)
      .openapi({ description: 'The OTLP/HTTP traces URL, e.g. https://otlp.example.com/v1/traces (https, public host)' }),
    headers: z
      .record(HeaderName, HeaderValue)
      .optional()
      .openapi({ description: 'Sent with every export (e.g. an API key); stored sealed, shown masked' }),
    enabled: z.boolean().optional().openapi({ description: 'Default true' }),
  })
  .strict()
  .openapi('TraceExportRequest');

const TraceExportSchema = z
  .object({
    public_app_id: z.string(),
    endpoint: z.string(),
    headers: z.record(z.string(), z.string()).openapi({ description: 'Each header name with its value masked' }),
    enabled: z.boolean(),
    created_at: z.string().openapi({ format: 'date-time' }),
    updated_at: z.string().openapi({ format: 'date-time' }),
    delivery: z.object({
      state: z.enum(['pending', 'ok', 'failing']).openapi({ description: 'pending: nothing sent since the export was set' }),
      last_success_at: z.string().nullable().openapi({ format: 'date-time' }),
      last_error_at: z.string().nullable().openapi({ format: 'date-time' }),
      last_error: z.string().nullable(),
      consecutive_failures: z.number().int(),
    }),
  })
  .openapi('TraceExport');

const TraceExportDeleted = z.object({ public_app_id: z.string(), deleted: z.literal(true) }).openapi('TraceExportDeleted');

const path = '/v1/developer/apps/{public_app_id}/traces';
const putTraces = createRoute({
  method: 'put',
  path,
  summary: 'Send one OpenTelemetry span per call of this app to an OTLP/HTTP endpoint (GenAI semantic conventions; no content)',
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam, body: { required: true, content: json(TraceExportBody) } },
  responses: { 200: { description: 'Set', content: json(TraceExportSchema) }, ...errorResponses(400, 401, 403, 404, 409, 413, 429) },
});
const getTraces = createRoute({
  method: 'get',
  path,
  summary: "The app's trace export (headers masked) and how its last deliveries went",
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam },
  responses: { 200: { description: 'The export', content: json(TraceExportSchema) }, ...errorResponses(401, 403, 404, 429) },
});
const deleteTraces = createRoute({
  method: 'delete',
  path,
  summary: 'Stop exporting traces of this app',
  middleware: [requireDeveloper()] as const,
  request: { params: PublicAppIdParam },
  responses: { 200: { description: 'Deleted', content: json(TraceExportDeleted) }, ...errorResponses(401, 403, 404, 429) },
});

function view(publicAppId: string, row: TraceExportRow): z.infer<typeof TraceExportSchema> {
  const state = row.consecutiveFailures > 0 ? 'failing' : row.lastSuccessAt === null ? 'pending' : 'ok';
  return {
    public_app_id: publicAppId,
    endpoint: row.endpoint,
    headers: row.headersMasked,
    enabled: row.enabled,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    delivery: {
      state,
      last_success_at: row.lastSuccessAt?.toISOString() ?? null,
      last_error_at: row.lastErrorAt?.toISOString() ?? null,
      last_error: row.lastError,
      consecutive_failures: row.consecutiveFailures,
    },
  };
}

function checkedHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const entries = Object.entries(headers ?? {});
  if (entries.length > maxHeaders) throw new FaucetError('invalid_request', `at most ${maxHeaders} headers`);
  const names = new Set<string>();
  for (const [name] of entries) {
    const lower = name.toLowerCase();
    if (reservedHeaders.has(lower)) throw new FaucetError('invalid_request', `the ${lower} header is set by Faucet`);
    if (names.has(lower)) throw new FaucetError('invalid_request', `the ${lower} header is named twice`);
    names.add(lower);
  }
  return Object.fromEntries(entries);
}

const noExport = () => new FaucetError('not_found', 'This app exports no traces');

export function registerDeveloperTracesRoutes(app: ServiceApp): void {
  app.openapi(putTraces, async (c) => {
    const body = c.req.valid('json');
    const { db } = c.var.database();
    const owned = await ownedApp(db, c.req.valid('param').public_app_id, c.var.developer.developerId);
    if (owned.archived) throw new FaucetError('invalid_state', 'This app is archived: it takes no changes');
    const endpoint = traceEndpointFor(body.endpoint, c.env);
    const row = await saveTraceExport(db, c.env, {
      appId: owned.appId,
      endpoint,
      headers: checkedHeaders(body.headers),
      enabled: body.enabled ?? true,
    });
    return c.json(view(owned.publicAppId, row), 200);
  });

  app.openapi(getTraces, async (c) => {
    const { db } = c.var.database();
    const owned = await ownedApp(db, c.req.valid('param').public_app_id, c.var.developer.developerId);
    const row = await findTraceExport(db, owned.appId);
    if (row === null) throw noExport();
    return c.json(view(owned.publicAppId, row), 200);
  });

  app.openapi(deleteTraces, async (c) => {
    const { db } = c.var.database();
    const owned = await ownedApp(db, c.req.valid('param').public_app_id, c.var.developer.developerId);
    if (!(await deleteTraceExport(db, owned.appId))) throw noExport();
    return c.json({ public_app_id: owned.publicAppId, deleted: true as const }, 200);
  });
}
