/**
 * The request counters live in a fixed set of `MetricsAggregator` shards, never one global object:
 * each isolate adds its batches to one shard it picked at random, and `/metrics` reads every shard
 * and sums them. Sixteen shards spread the flushes of many isolates (at most one per isolate and
 * second, workers/shared/request-counters/batch.ts) well below what one object serves.
 */
import type { MetricsObject } from '../durable-objects.ts';
import { renderPrometheus } from './exposition.ts';

export const METRICS_SHARD_COUNT = 16;

export function shardName(index: number): string {
  return `shard-${index}`;
}

export function randomShard(): string {
  return shardName(Math.floor(Math.random() * METRICS_SHARD_COUNT));
}

/** The Prometheus exposition of every shard's counters (of one service, when given). */
export async function readMetrics(namespace: DurableObjectNamespace<MetricsObject>, service?: string): Promise<string> {
  const shards = await Promise.all(
    Array.from({ length: METRICS_SHARD_COUNT }, (_, index) => namespace.get(namespace.idFromName(shardName(index))).series(service)),
  );
  return renderPrometheus(shards);
}
