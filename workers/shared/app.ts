/**
 * The one way a Faucet HTTP worker is built: request IDs, logs and metrics, rate limiting, body size
 * limit, per-request database, the error envelope, `/health`, `/ready`, `/metrics`, `/openapi.json`.
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppEnv } from './app-env.ts';
import { intSetting, type ServiceName } from './env.ts';
import type { OpenDatabase } from './db.ts';
import { FaucetError } from './wire/errors.ts';
import { registerHealthRoutes } from './health-routes.ts';
import { appCors } from './middleware/app-cors.ts';
import { database } from './middleware/database.ts';
import { flushPending } from './request-counters/batch.ts';
import { readMetrics } from './request-counters/shards.ts';
import { observe } from './middleware/observe.ts';
import { rateLimit, type RateLimitOptions } from './middleware/rate-limit.ts';
import { requestId } from './middleware/request-id.ts';
import { describeZodError, renderError } from './render-error.ts';

export interface ServiceAppOptions {
  service: ServiceName;
  title: string;
  /** The worker's version on the release line (`workerVersions`, release.ts): `/health`, `/ready` and the OpenAPI document report it. */
  version: string;
  rateLimit: Omit<RateLimitOptions, 'exempt'>;
  defaultMaxBodyBytes: number;
  /** Opens the database (default: Neon's Pool over `DATABASE_URL`). */
  openDatabase?: OpenDatabase;
  /**
   * A surface that answers errors in another API's envelope (the gateway's Anthropic Messages), for
   * refusals made before its route runs (body limit, rate limit, an unknown route under it).
   */
  errorEnvelopes?: ReadonlyArray<{ pathPrefix: string; render(error: unknown, requestId: string): Response }>;
}

export type ServiceApp = OpenAPIHono<AppEnv>;

export function createServiceApp(options: ServiceAppOptions): ServiceApp {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw new FaucetError('invalid_request', describeZodError(result.error));
    },
  });

  app.use('*', async function service(c, next) {
    c.set('service', options.service);
    await next();
  });
  app.use('*', requestId());
  // Browser apps call the API and the gateway directly with bearer tokens (no cookies): CORS answers
  // the origins the request's app lists; preflights are answered before rate limiting and auth.
  app.use('*', appCors());
  app.use('*', observe());
  app.use('*', rateLimit({ ...options.rateLimit, exempt: ['/health'] }));
  app.use('*', (c, next) =>
    bodyLimit({
      maxSize: intSetting(c.env.MAX_REQUEST_BODY_BYTES, options.defaultMaxBodyBytes),
      onError: () => {
        throw new FaucetError('payload_too_large', 'Request body is too large');
      },
    })(c, next),
  );
  app.use('*', database(options.openDatabase));

  const render = (error: unknown, c: Context<AppEnv>): Response => {
    const envelope = options.errorEnvelopes?.find((candidate) => c.req.path.startsWith(candidate.pathPrefix));
    if (envelope === undefined) return renderError(error, c);
    const rendered = renderError(error, c);
    // Logged and counted as any error; answered in the surface's own words.
    return envelope.render(error, c.get('requestId') ?? rendered.headers.get('x-request-id') ?? 'unknown');
  };
  app.onError(render);
  app.notFound((c) => render(new FaucetError('not_found', `No route for ${c.req.method} ${c.req.path}`), c));

  registerHealthRoutes(app, { service: options.service, version: options.version });
  app.get('/metrics', async (c) => {
    if (!c.env.METRICS) throw new FaucetError('not_found', 'Metrics are not configured');
    await flushPending(c);
    const text = await readMetrics(c.env.METRICS, options.service).catch((error: unknown) => {
      throw new FaucetError('internal_error', 'Metrics are unavailable', { cause: error });
    });
    return c.body(text, 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
  });
  app.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: { title: options.title, version: options.version },
  });
  return app;
}
