/**
 * The price catalog: what one million tokens of each class cost, per `provider:model`, at a given
 * time and input size. Its data is the `@pydantic/genai-prices` package (converted exactly:
 * genai-prices-catalog.ts) plus Faucet's own small overlay (the local mock model). A catalog is
 * identified by its version, the package version plus the overlay's revision: a new package or an
 * overlay change is a new version, never an edit of an old one, and every usage record keeps the
 * version and the per-million prices it was rated with (usage_events), so an old call re-rates to
 * the cent without this catalog.
 *
 * Lookup never scans: a Map of every model id and exact alias is built once per isolate, on first
 * use (no price converted then); a model's prices are converted on its first lookup and kept.
 */
import { parseWireAmount } from '../money/index.ts';
import { genaiCatalogSources, genaiPricesVersion, type CatalogSource } from './genai-prices-catalog.ts';
import type { CatalogModel, ExcludedModel, ModelPrice, PriceClass, PriceConstraint, TieredModelPrice, TieredPrice } from './price-types.ts';

export type { CatalogModel, ExcludedModel, ModelPrice, PriceClass, ResolvedPrice, TieredModelPrice } from './price-types.ts';

/**
 * Faucet's revision of the catalog: the overlay below and the conversion rules of
 * genai-prices-catalog.ts. Bump it with any change to either (3: one-hour cache writes priced).
 */
const overlayRevision = 3;

const flat = (amount: string): TieredPrice => ({ base: parseWireAmount(amount), tiers: [] });

/**
 * The deterministic local models of the demo stack (providers/mock/mock-adapter.ts): priced like a
 * small real model so the platform route moves visible money in demos and tests.
 */
const mockModel = (model: string, name: string): CatalogModel => ({
  provider: 'mock',
  model,
  name,
  contextWindow: 32_768,
  periods: [
    {
      constraint: null,
      prices: { inputPerMillion: flat('1.00000000'), outputPerMillion: flat('2.00000000'), cachedInputPerMillion: flat('0.50000000') },
    },
  ],
});

/** Models priced by Faucet itself, not by the package. */
const overlay: CatalogModel[] = [mockModel('echo', 'Faucet mock echo'), mockModel('tools', 'Faucet mock tools')];

/** An entry of the catalog: its model once converted, or why it was left out. */
type Loaded = CatalogModel | ExcludedModel;
const isModel = (entry: Loaded): entry is CatalogModel => 'periods' in entry;

/**
 * A catalog version. Lookup goes through a Map of every name (built once, without converting any
 * price); a model's prices are converted on its first lookup and kept.
 */
export class PriceCatalog {
  readonly version: string;
  readonly #readSources: () => CatalogSource[];
  #sources: CatalogSource[] | undefined;
  readonly #index = new Map<string, CatalogSource>();
  readonly #loaded = new Map<CatalogSource, Loaded>();

  /** `sources` is read on first use (so an isolate that never rates pays nothing at start-up). */
  constructor(version: string, sources: CatalogSource[] | (() => CatalogSource[])) {
    this.version = version;
    this.#readSources = typeof sources === 'function' ? sources : () => sources;
  }

  #all(): CatalogSource[] {
    if (this.#sources === undefined) {
      const sources = this.#readSources();
      // Model ids first, then aliases; the first source naming a key keeps it.
      for (const source of sources) if (!this.#index.has(source.key)) this.#index.set(source.key, source);
      for (const source of sources) for (const alias of source.aliases) if (!this.#index.has(alias)) this.#index.set(alias, source);
      this.#sources = sources;
    }
    return this.#sources;
  }

  #load(source: CatalogSource): Loaded {
    let loaded = this.#loaded.get(source);
    if (loaded === undefined) {
      loaded = source.load();
      this.#loaded.set(source, loaded);
    }
    return loaded;
  }

  /** The model `provider:model` names (its id or an exact alias), if the catalog prices it. */
  find(provider: string, model: string): CatalogModel | undefined {
    this.#all();
    const source = this.#index.get(catalogKey(provider, model));
    if (source === undefined) return undefined;
    const loaded = this.#load(source);
    return isModel(loaded) ? loaded : undefined;
  }

  /** Every priced model of the providers `include` accepts (all by default), in catalog order; converts them. */
  models(include: (provider: string) => boolean = () => true): CatalogModel[] {
    return this.#all()
      .filter((source) => include(source.provider) && this.#index.get(source.key) === source)
      .map((source) => this.#load(source))
      .filter(isModel);
  }

  /** The package's models left out, with the reason (genai-prices-catalog.ts). */
  excluded(): ExcludedModel[] {
    return this.#all()
      .map((source) => this.#load(source))
      .filter((entry): entry is ExcludedModel => !isModel(entry));
  }
}

/** The catalog key of a model: `provider:model`. */
export function catalogKey(provider: string, model: string): string {
  return `${provider}:${model}`;
}

/** A catalog of already converted models (tests, and the overlay). */
export function catalogSourcesOf(models: readonly CatalogModel[]): CatalogSource[] {
  return models.map((model) => ({
    provider: model.provider,
    key: catalogKey(model.provider, model.model),
    aliases: [],
    load: () => model,
  }));
}

/** The catalog every call is rated with: the overlay, then the package's models. */
export const currentPriceCatalog = new PriceCatalog(`genai-prices@${genaiPricesVersion}+faucet.${overlayRevision}`, () => [
  ...catalogSourcesOf(overlay),
  ...genaiCatalogSources(),
]);

/** The model (and its prices) `provider:model` names, by id or exact alias, if the catalog prices it. */
export function findModelPrice(catalog: PriceCatalog, provider: string, model: string): CatalogModel | undefined {
  return catalog.find(provider, model);
}

function holds(constraint: PriceConstraint, at: Date): boolean {
  if (constraint.type === 'from_date') return at.getTime() >= constraint.fromMs;
  const second = at.getUTCHours() * 3600 + at.getUTCMinutes() * 60 + at.getUTCSeconds();
  const { startSecond, endSecond } = constraint;
  return endSecond < startSecond ? second >= startSecond || second < endSecond : second >= startSecond && second < endSecond;
}

/** The period's prices at `at`: the last period whose constraint holds (an unconstrained one always does); none, the first. */
export function pricesAt(model: CatalogModel, at: Date): TieredModelPrice {
  if (Number.isNaN(at.getTime())) throw new RangeError('invalid pricing time');
  for (let index = model.periods.length - 1; index >= 0; index -= 1) {
    const period = model.periods[index];
    if (period && (period.constraint === null || holds(period.constraint, at))) return period.prices;
  }
  const first = model.periods[0];
  if (!first) throw new Error(`${model.provider}:${model.model} has no price period`);
  return first.prices;
}

function tierPrice(price: TieredPrice, inputTokens: bigint) {
  let rate = price.base;
  // A bigint compares exactly with a (whole) number: no BigInt made per tier on every call.
  for (const tier of price.tiers) if (inputTokens > tier.above) rate = tier.price;
  return rate;
}

/** The per-million prices of one call to `model` at `at` with `inputTokens` input tokens in all. */
export function modelPriceAt(model: CatalogModel, at: Date, inputTokens: bigint): ModelPrice {
  const prices = pricesAt(model, at);
  const result: ModelPrice = {
    inputPerMillion: tierPrice(prices.inputPerMillion, inputTokens),
    outputPerMillion: tierPrice(prices.outputPerMillion, inputTokens),
  };
  // `for…in` rather than Object.entries: this runs on every rating, and needs no array of pairs.
  for (const priceClass in prices) {
    const price = prices[priceClass as PriceClass];
    if (price) result[priceClass as PriceClass] = tierPrice(price, inputTokens);
  }
  return result;
}
