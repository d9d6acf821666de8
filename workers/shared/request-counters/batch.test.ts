import parsePrometheus from 'parse-prometheus-text-format';
import { env as cloudflareEnv } from 'cloudflare:test';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createServiceApp } from '../app.ts';
import type { MetricsObject, SeriesCounts } from '../durable-objects.ts';
import type { Env } from '../env.ts';
import { api, call, createTestEnv, type TestEnv } from '../../test/harness.ts';
import { METRICS_SHARD_COUNT, readMetrics, shardName } from './shards.ts';

type MetricsNamespace = DurableObjectNamespace<MetricsObject>;
const realMetrics = (cloudflareEnv as unknown as Env).METRICS!;

/** The real shards behind a namespace that records every `record` call and can fail or hang them. */
function observedMetrics(behaviour: { failFirst?: number; hang?: boolean } = {}) {
  const calls: SeriesCounts[][] = [];
  let failures = behaviour.failFirst ?? 0;
  const namespace = {
    idFromName: (name: string) => realMetrics.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = realMetrics.get(id);
      return {
        record: async (batch: SeriesCounts[]) => {
          calls.push(batch);
          if (behaviour.hang) return new Promise<void>(() => undefined);
          if (failures-- > 0) throw new Error('Durable Object is overloaded');
          return stub.record(batch);
        },
        series: (service?: string) => stub.series(service),
      };
    },
  } as unknown as MetricsNamespace;
  const requestsSent = () => calls.flat().reduce((sum, counts) => sum + counts.requests, 0);
  return { namespace, calls, requestsSent };
}

/** A service app with one route of its own, so that its series is this test's alone. */
function probe() {
  const prefix = `/probe-${crypto.randomUUID().slice(0, 8)}`;
  const app = createServiceApp({
    service: 'gateway',
    title: 'probe',
    version: '0',
    rateLimit: {
      maxRequestsSetting: 'GATEWAY_RATE_LIMIT_MAX_REQUESTS',
      windowMsSetting: 'GATEWAY_RATE_LIMIT_WINDOW_MS',
      defaultMaxRequests: 0,
      defaultWindowMs: 60_000,
    },
    defaultMaxBodyBytes: 1024,
  });
  app.get(`${prefix}/:id`, (c) => c.json({ id: c.req.param('id') }));
  return { app, route: `${prefix}/:id` };
}

/** Serves one request and returns its response without waiting for its `waitUntil` work. */
async function fetchLeavingWork(app: ReturnType<typeof probe>['app'], env: Env, path: string) {
  const pending: Promise<unknown>[] = [];
  const ctx = {
    waitUntil: (promise: Promise<unknown>) => void pending.push(promise),
    passThroughOnException: () => undefined,
    props: {},
  } as unknown as ExecutionContext;
  const response = await app.fetch(new Request(`http://faucet.test${path}`), env, ctx);
  return { response, pending };
}

/** `service_http_requests_total` of a route pattern (status 200) in an exposition. */
function requestsOf(text: string, route: string): number {
  const families = parsePrometheus(text);
  const family = families.find((entry) => entry.name === 'service_http_requests_total');
  const series = family?.metrics.find((metric) => metric.labels?.route === route && metric.labels?.status === '200');
  return series ? Number(series.value) : 0;
}

/**
 * A probe app whose isolate batch (flushing every `intervalMs`) has served one request: the first
 * request of a quiet isolate flushes at once, and that flush has landed.
 */
async function afterFirstFlush(intervalMs: string) {
  const metrics = observedMetrics();
  const env = { ...testEnv, METRICS: metrics.namespace, METRICS_FLUSH_INTERVAL_MS: intervalMs };
  const { app, route } = probe();
  const first = await fetchLeavingWork(app, env, route.replace(':id', '0'));
  await Promise.all(first.pending);
  return { metrics, env, app, route };
}

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

describe('request counters are batched per isolate', () => {
  it('N requests make a handful of shard calls, not N, and the shards count exactly N once flushed', async () => {
    const metrics = observedMetrics();
    const env = { ...testEnv, METRICS: metrics.namespace, METRICS_FLUSH_INTERVAL_MS: '1000' };
    const { app, route } = probe();
    const work: Promise<unknown>[] = [];
    const started = Date.now();
    for (let index = 0; index < 25; index++) {
      const { response, pending } = await fetchLeavingWork(app, env, route.replace(':id', String(index)));
      expect(response.status).toBe(200);
      work.push(...pending);
    }
    const elapsedSeconds = (Date.now() - started) / 1000;
    await Promise.all(work);
    // The first request flushes at once; the others ride on one flush a second after it (more only
    // if serving them took longer than a second on a loaded machine).
    expect(metrics.calls.length).toBeLessThanOrEqual(Math.ceil(elapsedSeconds) + 2);
    expect(metrics.calls.length).toBeLessThan(10);
    expect(metrics.requestsSent()).toBe(25);
    // Read from the shards directly: nothing pending in this isolate is flushed by the read.
    expect(requestsOf(await readMetrics(realMetrics, 'gateway'), route)).toBe(25);
    // And the service's own /metrics says the same.
    expect(requestsOf(await (await call(app, env, '/metrics')).text(), route)).toBe(25);
  });

  it("a flush due at once is sent after the response, never in the response's own turn", async () => {
    const metrics = observedMetrics();
    const env = { ...testEnv, METRICS: metrics.namespace, METRICS_FLUSH_INTERVAL_MS: '0' };
    const { app, route } = probe();
    const { response, pending } = await fetchLeavingWork(app, env, route.replace(':id', 'x'));
    expect(response.status).toBe(200);
    expect(metrics.calls).toHaveLength(0);
    await Promise.all(pending);
    expect(metrics.requestsSent()).toBe(1);
  });

  it('a request never waits on the metrics object: responses come back while the shard call hangs', async () => {
    const metrics = observedMetrics({ hang: true });
    const env = { ...testEnv, METRICS: metrics.namespace, METRICS_FLUSH_INTERVAL_MS: '0' };
    const { app, route } = probe();
    for (let index = 0; index < 3; index++) {
      const timeout = new Promise<'timed out'>((resolve) => setTimeout(() => resolve('timed out'), 5_000));
      const served = await Promise.race([fetchLeavingWork(app, env, route.replace(':id', 'x')), timeout]);
      expect(served).not.toBe('timed out');
      expect((served as { response: Response }).response.status).toBe(200);
      // Each flush starts once its response is out (a timer); let it start, and hang.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(metrics.calls.length).toBeGreaterThanOrEqual(1);
  });

  it('a flush that fails keeps its counts for the next one: none lost, none doubled', async () => {
    const metrics = observedMetrics({ failFirst: 1 });
    const env = { ...testEnv, METRICS: metrics.namespace, METRICS_FLUSH_INTERVAL_MS: '0' };
    const { app, route } = probe();
    const first = await fetchLeavingWork(app, env, route.replace(':id', '1'));
    await Promise.all(first.pending);
    expect(requestsOf(await readMetrics(realMetrics, 'gateway'), route)).toBe(0);
    const second = await fetchLeavingWork(app, env, route.replace(':id', '2'));
    await Promise.all(second.pending);
    expect(metrics.calls.map((batch) => batch.reduce((sum, counts) => sum + counts.requests, 0))).toEqual([1, 2]);
    expect(requestsOf(await readMetrics(realMetrics, 'gateway'), route)).toBe(2);
  });

  it("a clock set back never holds a flush, nor its request's waitUntil, longer than the interval", async () => {
    const { metrics, env, app, route } = await afterFirstFlush('1000');
    // The isolate's clock is set back a day after that flush.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() - 86_400_000);
      const second = await fetchLeavingWork(app, env, route.replace(':id', '1'));
      const timeout = new Promise<'timed out'>((resolve) => setTimeout(() => resolve('timed out'), 10_000));
      expect(await Promise.race([Promise.all(second.pending), timeout])).not.toBe('timed out');
    } finally {
      vi.useRealTimers();
    }
    expect(metrics.requestsSent()).toBe(2);
  });

  it("/metrics first sends its isolate's pending counts, so it reports every request served before it", async () => {
    const { metrics, env, app, route } = await afterFirstFlush('3000');
    for (let index = 1; index < 5; index++) {
      const { response } = await fetchLeavingWork(app, env, route.replace(':id', String(index)));
      expect(response.status).toBe(200);
    }
    expect(metrics.calls.length).toBe(1);
    // The next flush is seconds away; the read sends the four pending requests now.
    expect(requestsOf(await (await call(app, env, '/metrics')).text(), route)).toBe(5);
  });
});

describe('metrics shards', () => {
  it('/metrics sums the same series across shards, and only the asking service', async () => {
    const route = `/sharded-${crypto.randomUUID().slice(0, 8)}`;
    const counts = (service: string, requests: number): SeriesCounts => ({
      service,
      method: 'GET',
      route,
      status: '200',
      requests,
      durationMsSum: requests * 2,
      rateLimited: 0,
    });
    await realMetrics.get(realMetrics.idFromName(shardName(1))).record([counts('api', 3)]);
    await realMetrics.get(realMetrics.idFromName(shardName(METRICS_SHARD_COUNT - 1))).record([counts('api', 4), counts('gateway', 9)]);
    const text = await (await call(api(), testEnv, '/metrics')).text();
    expect(requestsOf(text, route)).toBe(7);
    expect(text).toContain(`service_http_request_duration_ms_sum{service="api",method="GET",route="${route}",status="200"} 14`);
    expect(text).not.toMatch(new RegExp(`service="gateway",method="GET",route="${route}"`));
  });
});
