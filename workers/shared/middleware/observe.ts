import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { createLogger } from '../logger.ts';
import { routePattern } from '../route-pattern.ts';
import { waitUntil } from '../wait-until.ts';

/**
 * Access log line and metrics sample for every request. The sample goes to the metrics Durable
 * Object through `waitUntil`, after the response: never on the request's critical path.
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
    const metrics = c.env.METRICS;
    if (metrics) {
      // Started inside a promise so that a binding throwing synchronously is caught like a rejection.
      const recording = Promise.resolve()
        .then(() => metrics.get(metrics.idFromName('global')).record([sample]))
        .catch((error: unknown) => logger.warn('metrics unavailable', { error: (error as Error).name }));
      waitUntil(c, recording);
    }
  };
}
