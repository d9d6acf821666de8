/**
 * The price catalog: what one million tokens cost at each provider, per `provider:model`.
 * Versioned so every rated usage record says which prices it was rated with. Prices are the
 * providers' public list prices (USD, standard tier, no batch discount) as recorded on the
 * catalog date; a price change is a new version, never an edit of an old one.
 */
import { parseWireAmount, type Usd } from '../money/index.ts';

export interface ModelPrice {
  inputPerMillion: Usd;
  outputPerMillion: Usd;
  /** Price of input tokens the provider served from its prompt cache; absent = same as input. */
  cachedInputPerMillion?: Usd;
}

export interface PriceCatalog {
  version: string;
  /** Date the prices were recorded (ISO-8601 day). */
  recordedOn: string;
  prices: ReadonlyMap<string, ModelPrice>;
}

function price(input: string, output: string, cachedInput?: string): ModelPrice {
  return {
    inputPerMillion: parseWireAmount(input),
    outputPerMillion: parseWireAmount(output),
    ...(cachedInput === undefined ? {} : { cachedInputPerMillion: parseWireAmount(cachedInput) }),
  };
}

export const currentPriceCatalog: PriceCatalog = {
  version: '2026-11-22.1',
  recordedOn: '2026-11-22',
  prices: new Map<string, ModelPrice>([
    // The deterministic local model of the demo stack: priced like a small real model so the
    // platform route moves visible money in demos and tests.
    ['mock:echo', price('1.00000000', '2.00000000', '0.50000000')],
    ['openai:gpt-4o-mini', price('0.15000000', '0.60000000', '0.07500000')],
    ['openai:gpt-4.1-mini', price('0.40000000', '1.60000000', '0.10000000')],
    ['anthropic:claude-sonnet-4-5', price('3.00000000', '15.00000000', '0.30000000')],
    ['anthropic:claude-haiku-4-5', price('1.00000000', '5.00000000', '0.10000000')],
  ]),
};

/** The catalog key of a model: `provider:model`. */
export function catalogKey(provider: string, model: string): string {
  return `${provider}:${model}`;
}

export function findModelPrice(catalog: PriceCatalog, provider: string, model: string): ModelPrice | undefined {
  return catalog.prices.get(catalogKey(provider, model));
}
