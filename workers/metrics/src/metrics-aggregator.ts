import { DurableObject } from 'cloudflare:workers';
import type { Env } from '#shared/env.ts';
import type { MetricsObject, SeriesCounts } from '#shared/durable-objects.ts';
import { addCounts, seriesKey } from '#shared/request-counters/exposition.ts';

/**
 * One shard of the request counters (`shard-0` … `shard-15`, workers/shared/request-counters/shards.ts).
 * Isolates add their batched counts here, at most once a second each; `/metrics` reads every
 * shard's series and sums them. Counters live in memory and in the object's storage, so they
 * survive eviction.
 */
export class MetricsAggregator extends DurableObject<Env> implements MetricsObject {
  private readonly counts = new Map<string, SeriesCounts>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const stored = await ctx.storage.list<SeriesCounts>({ prefix: 's:' });
      for (const [key, value] of stored) this.counts.set(key.slice(2), value);
    });
  }

  async record(batch: SeriesCounts[]): Promise<void> {
    const changed: Record<string, SeriesCounts> = {};
    for (const counts of batch) {
      const key = seriesKey(counts);
      const state = this.counts.get(key) ?? {
        service: counts.service,
        method: counts.method,
        route: counts.route,
        status: counts.status,
        requests: 0,
        durationMsSum: 0,
        rateLimited: 0,
      };
      addCounts(state, counts);
      this.counts.set(key, state);
      changed[`s:${key}`] = state;
    }
    await this.ctx.storage.put(changed);
  }

  async series(service?: string): Promise<SeriesCounts[]> {
    return [...this.counts.values()].filter((state) => !service || state.service === service);
  }
}
