import { DurableObject } from 'cloudflare:workers';
import type { Env } from '#shared/env.ts';
import { renderPrometheus, type RequestSample } from './prometheus.ts';
import type { MetricsObject } from '#shared/durable-objects.ts';

interface SeriesState {
  service: string;
  method: string;
  route: string;
  status: string;
  requests: number;
  durationMsSum: number;
  rateLimited: number;
}

/**
 * Aggregates request samples from every worker (one instance, `global`). Counters live in memory and
 * in the object's storage, so they survive eviction; workers send samples with `waitUntil`, off the
 * request's critical path.
 */
export class MetricsAggregator extends DurableObject<Env> implements MetricsObject {
  private readonly series = new Map<string, SeriesState>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const stored = await ctx.storage.list<SeriesState>({ prefix: 's:' });
      for (const [key, value] of stored) this.series.set(key, value);
    });
  }

  async record(samples: RequestSample[]): Promise<void> {
    const changed: Record<string, SeriesState> = {};
    for (const sample of samples) {
      const status = String(sample.status);
      const key = `s:${sample.service}|${sample.method}|${sample.route}|${status}`;
      const state = this.series.get(key) ?? {
        service: sample.service,
        method: sample.method,
        route: sample.route,
        status,
        requests: 0,
        durationMsSum: 0,
        rateLimited: 0,
      };
      state.requests += 1;
      state.durationMsSum += sample.durationMs;
      if (sample.rateLimited) state.rateLimited += 1;
      this.series.set(key, state);
      changed[key] = state;
    }
    await this.ctx.storage.put(changed);
  }

  async render(service?: string): Promise<string> {
    const states = [...this.series.values()].filter((state) => !service || state.service === service);
    const labels = (state: SeriesState) => ({
      service: state.service,
      method: state.method,
      route: state.route,
      status: state.status,
    });
    const limitedByRoute = new Map<string, { labels: Record<string, string>; value: number }>();
    for (const state of states) {
      if (!state.rateLimited) continue;
      const key = `${state.service}|${state.method}|${state.route}`;
      const entry = limitedByRoute.get(key) ?? {
        labels: { service: state.service, method: state.method, route: state.route },
        value: 0,
      };
      entry.value += state.rateLimited;
      limitedByRoute.set(key, entry);
    }
    return renderPrometheus([
      {
        name: 'service_http_requests_total',
        help: 'HTTP requests served, by service, method, route pattern and status.',
        series: states.map((state) => ({ labels: labels(state), value: state.requests })),
      },
      {
        name: 'service_http_request_duration_ms_sum',
        help: 'Sum of request durations in milliseconds, by service, method, route pattern and status.',
        series: states.map((state) => ({ labels: labels(state), value: state.durationMsSum })),
      },
      {
        name: 'service_rate_limited_total',
        help: 'Requests refused with 429 by the rate limiter, by service, method and route pattern.',
        series: [...limitedByRoute.values()],
      },
    ]);
  }
}
