/**
 * What the API and the gateway call on the metrics worker's Durable Objects (bound by `script_name`).
 * The objects implement these; shared code knows only the contract, never the worker.
 */

export interface WindowDecision {
  allowed: boolean;
  remaining: number;
  /** Epoch milliseconds at which the current window ends. */
  resetAtMs: number;
}

/** One request's sample, as the `observe` middleware takes it. */
export interface RequestSample {
  service: string;
  method: string;
  route: string;
  status: number;
  durationMs: number;
  rateLimited: boolean;
}

/** The counters of one series (service, method, route pattern, status), summed over many requests. */
export interface SeriesCounts {
  service: string;
  method: string;
  route: string;
  status: string;
  requests: number;
  durationMsSum: number;
  rateLimited: number;
}

export interface RateLimiterObject extends Rpc.DurableObjectBranded {
  hit(limit: number, windowMs: number): Promise<WindowDecision>;
}

/**
 * One shard of the request counters (workers/shared/metrics/shards.ts). Workers add their isolate's
 * batched counts to a shard; `/metrics` sums every shard's series.
 */
export interface MetricsObject extends Rpc.DurableObjectBranded {
  record(batch: SeriesCounts[]): Promise<void>;
  series(service?: string): Promise<SeriesCounts[]>;
}
