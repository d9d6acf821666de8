/**
 * `GET /health` (liveness) and `GET /ready` (a shallow configuration report, no secret values) of a
 * service app. Both name the worker that answers and its version on the release line (release.ts),
 * so an operator sees which build serves behind a URL.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { ServiceApp } from './app.ts';
import type { ServiceName } from './env.ts';

const worker = {
  service: z.string().openapi({ example: 'gateway' }),
  version: z.string().openapi({ description: "The worker's version on the release line", example: '0.7.0' }),
};

const Health = z.object({ status: z.literal('ok'), ...worker }).openapi('Health');

const Readiness = z
  .object({
    status: z.enum(['ready', 'not_ready']),
    ...worker,
    checks: z.object({
      database_configured: z.boolean(),
      gateway_base_url: z.string().nullable(),
      api_base_url: z.string().nullable(),
      rate_limiter_bound: z.boolean(),
      metrics_bound: z.boolean(),
      environment: z.string(),
    }),
  })
  .openapi('Readiness');

const healthRoute = createRoute({
  method: 'get',
  path: '/health',
  summary: 'Liveness: the answering worker and its version',
  responses: { 200: { description: 'Alive', content: { 'application/json': { schema: Health } } } },
});

const readyRoute = createRoute({
  method: 'get',
  path: '/ready',
  summary: 'Readiness: the answering worker, its version and what it is configured with (no secret values)',
  responses: {
    200: { description: 'Ready', content: { 'application/json': { schema: Readiness } } },
    503: { description: 'Not ready: no database is configured', content: { 'application/json': { schema: Readiness } } },
  },
});

export function registerHealthRoutes(app: ServiceApp, answering: { service: ServiceName; version: string }): void {
  app.openapi(healthRoute, (c) => c.json({ status: 'ok' as const, ...answering }, 200));
  app.openapi(readyRoute, (c) => {
    const checks = {
      database_configured: Boolean(c.env.DATABASE_URL),
      gateway_base_url: c.env.GATEWAY_BASE_URL ?? null,
      api_base_url: c.env.API_BASE_URL ?? null,
      rate_limiter_bound: Boolean(c.env.RATE_LIMITER),
      metrics_bound: Boolean(c.env.METRICS),
      environment: c.env.ENVIRONMENT ?? 'development',
    };
    return checks.database_configured
      ? c.json({ status: 'ready' as const, ...answering, checks }, 200)
      : c.json({ status: 'not_ready' as const, ...answering, checks }, 503);
  });
}
