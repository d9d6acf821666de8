/**
 * Request counters are summed in the isolate and sent to the metrics shards in batches: a request
 * adds its sample to its isolate's batch and makes no Durable Object call of its own. The first
 * request after a quiet second flushes as soon as its response is out; later ones fall into a flush
 * scheduled for one second after the previous (`METRICS_FLUSH_INTERVAL_MS`, `0` = every request), carried by that
 * request's `waitUntil`, after its response. So an isolate calls its shard at most once per interval
 * however busy it is. A flush that fails puts its counts back for the next one: nothing is lost
 * while a shard is unreachable (a flush whose reply is lost after the shard applied it may count
 * twice — these are operational counters, not money).
 */
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.ts';
import type { MetricsObject, RequestSample, SeriesCounts } from '../durable-objects.ts';
import { intSetting } from '../env.ts';
import type { Logger } from '../logger.ts';
import { waitUntil } from '../wait-until.ts';
import { addCounts, seriesKey } from './exposition.ts';
import { randomShard } from './shards.ts';

type MetricsNamespace = DurableObjectNamespace<MetricsObject>;

const DEFAULT_FLUSH_INTERVAL_MS = 1_000;
/** A scheduled flush not started this long after its time was lost with its request: schedule anew. */
const STALE_AFTER_MS = 30_000;

class IsolateBatch {
  private pending = new Map<string, SeriesCounts>();
  /** When the scheduled flush (if any) is due; it takes `pending` then. */
  private scheduledFor: number | undefined;
  private lastFlushAt = Number.NEGATIVE_INFINITY;
  /** Each isolate writes to one shard, picked at random when its batch is made. */
  readonly shard = randomShard();

  add(counts: SeriesCounts): void {
    const key = seriesKey(counts);
    const state = this.pending.get(key);
    if (state) addCounts(state, counts);
    else this.pending.set(key, { ...counts });
  }

  /** A flush for the caller's `waitUntil` when none is scheduled yet; otherwise the scheduled one takes these counts. */
  schedule(namespace: MetricsNamespace, intervalMs: number, logger: Logger): Promise<void> | undefined {
    const now = Date.now();
    if (this.scheduledFor !== undefined && now < this.scheduledFor + STALE_AFTER_MS) return undefined;
    const due = Math.max(now, this.lastFlushAt + intervalMs);
    this.scheduledFor = due;
    // Even a flush due now waits for a timer: it then runs after the response is written, never in
    // the response's own turn (where the shard's call would be made before the answer left).
    // Never longer than the interval: a clock set back (lastFlushAt then in the future) must not
    // hold the flush, and the request's waitUntil, for as long as it was set back.
    const wait = new Promise<void>((resolve) => setTimeout(resolve, Math.min(intervalMs, Math.max(0, due - now))));
    return wait.then(() => {
      if (this.scheduledFor === due) this.scheduledFor = undefined;
      return this.flush(namespace, logger);
    });
  }

  /** Sends what is pending now; on failure the counts go back into the batch. Never rejects. */
  async flush(namespace: MetricsNamespace, logger: Logger): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    this.lastFlushAt = Date.now();
    try {
      await namespace.get(namespace.idFromName(this.shard)).record(batch);
    } catch (error) {
      for (const counts of batch) this.add(counts);
      logger.warn('metrics unavailable', { error: (error as Error).name, series: batch.length });
    }
  }
}

/** One batch per metrics namespace: the binding is the same object for every request of an isolate. */
const batches = new WeakMap<MetricsNamespace, IsolateBatch>();

function batchFor(namespace: MetricsNamespace): IsolateBatch {
  let batch = batches.get(namespace);
  if (!batch) {
    batch = new IsolateBatch();
    batches.set(namespace, batch);
  }
  return batch;
}

/** Counts one request; never waits on, nor fails because of, the metrics objects. */
export function recordRequest(c: Context<AppEnv>, sample: RequestSample): void {
  const namespace = c.env.METRICS;
  if (!namespace) return;
  const batch = batchFor(namespace);
  batch.add({
    service: sample.service,
    method: sample.method,
    route: sample.route,
    status: String(sample.status),
    requests: 1,
    durationMsSum: sample.durationMs,
    rateLimited: sample.rateLimited ? 1 : 0,
  });
  const flush = batch.schedule(namespace, intSetting(c.env.METRICS_FLUSH_INTERVAL_MS, DEFAULT_FLUSH_INTERVAL_MS), c.get('logger'));
  if (flush) waitUntil(c, flush);
}

/**
 * Sends this isolate's pending counts now (before `/metrics` reads the shards, so they include them).
 * A flush another request already has in flight is not awaited (its promise belongs to that
 * request): its counts show on the next read.
 */
export function flushPending(c: Context<AppEnv>): Promise<void> {
  const namespace = c.env.METRICS;
  if (!namespace) return Promise.resolve();
  return batchFor(namespace).flush(namespace, c.get('logger'));
}
