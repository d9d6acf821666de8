import { Hono } from 'hono';
import type { AppEnv } from '#shared/app-env.ts';
import { FaucetError } from '#shared/wire/errors.ts';
import { requestId } from '#shared/middleware/request-id.ts';
import { readMetrics } from '#shared/request-counters/shards.ts';
import { workerVersions } from '#shared/release.ts';
import { renderError } from '#shared/render-error.ts';

export { MetricsAggregator } from './metrics-aggregator.ts';
export { RateLimiter } from './rate-limiter.ts';

/**
 * The metrics worker hosts the Durable Objects that the API and the gateway bind to by
 * `script_name`. Its own HTTP face is minimal: liveness (with its version) and the aggregated exposition of all services.
 */
const app = new Hono<AppEnv>();

// Its errors are the DESIGN §4 envelope like every worker's, with the request id of its `x-request-id` header.
app.use(requestId());
app.onError((error, c) => renderError(error, c));

app.get('/health', (c) => c.json({ status: 'ok', service: 'metrics', version: workerVersions.metrics }));
app.get('/metrics', async (c) => {
  if (!c.env.METRICS) return c.text('metrics binding missing\n', 503);
  const text = await readMetrics(c.env.METRICS);
  return c.body(text, 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
});
app.notFound((c) => renderError(new FaucetError('not_found', 'Not found'), c));

export default app;
