/**
 * Catalog lookup benchmark ("model lookup must not scan"): what one call spends on the price
 * catalog and the model limits — resolve the model, its output cap, rate its worst case — with the full
 * catalog (genai-prices + models.dev limits) against a reference catalog of only the models asked for,
 * the size of the hand-kept catalog it replaced, in the same run. Equal times mean lookups do not grow
 * with the catalog; the gateway part of `npm run bench` gives the whole call's added latency.
 */
import { catalogKey, catalogSourcesOf, currentPriceCatalog, PriceCatalog } from '#shared/rating/catalog.ts';
import { outputTokenCap } from '#shared/rating/model-limits.ts';
import { rateUsage } from '#shared/rating/rate-usage.ts';

const ROUNDS = 7;
const CALLS_PER_ROUND = 20_000;
/** Ids as callers send them: catalog ids and aliases of several providers. */
const asked: Array<[string, string]> = [
  ['openai', 'gpt-4o-mini'],
  ['openai', 'gpt-4o-mini-2024-07-18'],
  ['anthropic', 'claude-sonnet-4-5'],
  ['google', 'gemini-2.5-flash'],
  ['groq', 'llama-3.3-70b-versatile'],
  ['openrouter', 'anthropic/claude-sonnet-4.5'],
  ['deepseek', 'deepseek-chat'],
  ['mock', 'echo'],
];

const splitKey = (key: string): [string, string] => [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)];

function perCallMicroseconds(catalog: PriceCatalog): number {
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    for (let index = 0; index < CALLS_PER_ROUND; index++) {
      const [provider, model] = asked[index % asked.length]!;
      const outputTokens = outputTokenCap(provider, model, catalog);
      rateUsage({ routeMode: 'platform', provider, model, inputTokens: 1_000, outputTokens, estimated: true }, {}, undefined, catalog);
    }
    rounds.push(((performance.now() - started) * 1000) / CALLS_PER_ROUND);
  }
  return rounds.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
}

/**
 * A catalog of only the `asked` models, priced as the current catalog prices them and found under the
 * same names (ids and aliases): the size of the hand-kept catalog the full one replaced. Shared with
 * the gateway part of the benchmark (gateway-catalog.ts).
 */
export function referenceCatalog(models: ReadonlyArray<readonly [string, string]>): PriceCatalog {
  const entries = models.map(([provider, model]) => {
    const entry = currentPriceCatalog.find(provider, model);
    if (entry === undefined) throw new Error(`${provider}:${model} is not in the current catalog`);
    return entry;
  });
  return new PriceCatalog(
    'reference',
    catalogSourcesOf([...new Set(entries)]).map((source) => ({
      ...source,
      aliases: models
        .map(([provider, model]) => catalogKey(provider, model))
        .filter((key) => currentPriceCatalog.find(...splitKey(key)) === source.load()),
    })),
  );
}

export async function runCatalogLookupBench(): Promise<void> {
  const started = performance.now();
  const all = currentPriceCatalog.models();
  const buildMs = performance.now() - started;
  // The reference prices the same models under the same names (ids and aliases), and nothing else.
  const reference = referenceCatalog(asked);
  // Warm both (first lookups convert prices and build the limits Map) before timing.
  perCallMicroseconds(reference);
  perCallMicroseconds(currentPriceCatalog);
  const full = perCallMicroseconds(currentPriceCatalog);
  const small = perCallMicroseconds(reference);
  console.log(
    `catalog ${currentPriceCatalog.version}: ${all.length} priced models (index and all prices built in ${buildMs.toFixed(0)} ms)`,
  );
  console.log(`resolve + output cap + rate, per call (median of ${ROUNDS} rounds of ${CALLS_PER_ROUND})`);
  console.log(`  full catalog                  ${full.toFixed(2)} µs`);
  console.log(`  reference of ${asked.length} models         ${small.toFixed(2)} µs`);
  console.log(`  ratio full / reference        ${(full / small).toFixed(2)}  (about 1: the lookup does not scan)`);
}
