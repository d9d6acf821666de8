/**
 * The shapes of the price catalog: per-million prices per token class, tiered by the call's input
 * size, in periods chosen by the call's time. All amounts are money (8 decimals), never floats.
 */
import type { Usd } from '../money/index.ts';

/**
 * Per-million prices of one call: one period, one tier. A class without its own price is rated at
 * the price it is a part of: cache reads, cache writes and audio input at the input price (a
 * one-hour cache write at the cache-write price); reasoning and audio output at the output price.
 */
export interface ModelPrice {
  inputPerMillion: Usd;
  outputPerMillion: Usd;
  cachedInputPerMillion?: Usd;
  cacheWritePerMillion?: Usd;
  /** A one-hour prompt-cache write (Anthropic's `ttl: '1h'`); `cacheWritePerMillion` is the five-minute one. */
  cacheWrite1hPerMillion?: Usd;
  audioInputPerMillion?: Usd;
  audioOutputPerMillion?: Usd;
  reasoningPerMillion?: Usd;
}

export type PriceClass = keyof ModelPrice;

/** The per-million prices a usage record keeps: every class, the fallbacks applied. */
export type ResolvedPrice = Required<ModelPrice>;

/**
 * A price that depends on the call's input size: `base`, or the price of the last tier whose
 * `above` the call's whole input token count exceeds (strictly). The one rate applies to every
 * token of the class, as the providers bill it (e.g. Anthropic above 200k input tokens).
 */
export interface TieredPrice {
  base: Usd;
  /** Ascending by `above`; prices never go down. */
  tiers: ReadonlyArray<{ above: number; price: Usd }>;
}

export type TieredModelPrice = { [K in PriceClass]?: TieredPrice } & { inputPerMillion: TieredPrice; outputPerMillion: TieredPrice };

/** When a period's prices apply: from a day on (UTC), or during a time of day (UTC, end exclusive, may wrap midnight). */
export type PriceConstraint =
  | { type: 'from_date'; startDate: string; fromMs: number }
  | { type: 'time_of_day'; startSecond: number; endSecond: number };

export interface PricePeriod {
  /** Null: always applies (checked last, as the first period of the list). */
  constraint: PriceConstraint | null;
  prices: TieredModelPrice;
}

export interface CatalogModel {
  provider: string;
  /** The provider's model id (what goes upstream). */
  model: string;
  name: string;
  /** Input + output tokens the model accepts, where the data says; null when unknown. */
  contextWindow: number | null;
  /** In the data's order: the last period whose constraint holds applies; none holding, the first. */
  periods: readonly PricePeriod[];
}

export interface ExcludedModel {
  /** `provider:model`. */
  key: string;
  reason: string;
}
