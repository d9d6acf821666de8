import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { createLogger } from '../logger.ts';
import { recordRequest } from '../request-counters/batch.ts';
import { routePattern } from '../route-pattern.ts';

/**
 * Access log line and metrics sample for every request. The sample joins the isolate's batch
 * (workers/shared/request-counters/batch.ts), sent to a metrics shard at most once a second after a
 * response: a request never calls, nor waits on, a metrics Durable Object.
 */
export function observe(): MiddlewareHandler<AppEnv> {
  return async function observeMiddleware(c, next) {
    const started = performance.now();
    const logger = createLogger({ service: c.get('service'), request_id: c.get('requestId') }, c.env.LOG_LEVEL);
    c.set('logger', logger);
    await next();
    const durationMs = Math.max(0, Math.round((performance.now() - started) * 1000) / 1000);
    const route = routePattern(c);
    const sample = {
      service: c.get('service'),
      method: c.req.method,
      route,
      status: c.res.status,
      durationMs,
      rateLimited: c.res.status === 429,
    };
    logger.info('request', { method: sample.method, route, status: sample.status, duration_ms: durationMs });
    recordRequest(c, sample);
  };
}
