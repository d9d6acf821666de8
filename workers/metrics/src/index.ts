import { Hono } from 'hono';
import type { Env } from '../../shared/env.ts';

export { MetricsAggregator } from './metrics-aggregator.ts';
export { RateLimiter } from './rate-limiter.ts';

/**
 * The metrics worker hosts the Durable Objects that the API and the gateway bind to by
 * `script_name`. Its own HTTP face is minimal: liveness and the aggregated exposition of all services.
 */
const app = new Hono<{ Bindings: Env }>();

app.get('/health', (c) => c.json({ status: 'ok', service: 'metrics' }));
app.get('/metrics', async (c) => {
  if (!c.env.METRICS) return c.text('metrics binding missing\n', 503);
  const text = await c.env.METRICS.get(c.env.METRICS.idFromName('global')).render();
  return c.body(text, 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
});
app.notFound((c) => c.json({ error: { code: 'not_found', message: 'Not found', request_id: crypto.randomUUID() } }, 404));

export default app;
