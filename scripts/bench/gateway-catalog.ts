/**
 * The gateway's added latency with the full price catalog against a reference catalog of only the
 * models asked ("the gateway's added latency with the larger catalog within noise of
 * before; model lookup must not scan"). Two in-process gateways, identical but for the catalog they
 * are given (`GatewayDependencies.priceCatalog`, the seam tests and benchmarks use; production always
 * has the current catalog), call an upstream in this process that answers at once, so a call's whole
 * time is what the gateway adds: authorize statement, hold bounds, output caps, rating, settle
 * statement. Calls go in blocks that alternate between the two (the order flipped every round), so a
 * change of load on the shared machine falls on both alike. Printed: p50 and p99 of each, the ratio of
 * the p50s and the median of the per-round ratios.
 */
import { createGatewayApp } from '../../workers/gateway/src/app.ts';
import type { Env } from '#shared/env.ts';
import { currentPriceCatalog, type PriceCatalog } from '#shared/rating/index.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { referenceCatalog } from './catalog-lookup.ts';

const ROUNDS = 12;
const CALLS_PER_BLOCK = 24;
const WARMUP_CALLS_PER_MODEL = 3;

/** Models as callers name them (ids and an alias) on OpenAI-compatible platform routes, and the local mock. */
const asked: Array<readonly [string, string]> = [
  ['openai', 'gpt-4o-mini'],
  ['openai', 'gpt-4o-mini-2024-07-18'],
  ['deepseek', 'deepseek-chat'],
  ['groq', 'llama-3.3-70b-versatile'],
  ['openrouter', 'anthropic/claude-sonnet-4.5'],
  ['mock', 'echo'],
];

/** Not keys: the upstream is a function in this process. */
const poolKeys = {
  OPENAI_API_KEY: 'sk-bench-not-a-real-key',
  DEEPSEEK_API_KEY: 'sk-bench-not-a-real-key',
  GROQ_API_KEY: 'gsk_bench_not_a_real_key_0123456789',
  OPENROUTER_API_KEY: 'sk-or-v1-bench-not-a-real-key',
};

const answerAtOnce: FetchFunction = async () =>
  Response.json({
    id: 'chatcmpl-catalog-bench',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: 'bench',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 14, completion_tokens: 1, total_tokens: 15 },
  });

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

export interface CatalogLatencyOptions {
  /** Gateway env reaching the benchmark's database. */
  env: Env;
  /** A session of the demo app with a funded wallet. */
  token: string;
}

export async function runCatalogLatency(options: CatalogLatencyOptions): Promise<void> {
  const env = { ...options.env, ...poolKeys };
  const reference = referenceCatalog(asked);
  const apps = new Map<'full' | 'reference', { app: ReturnType<typeof createGatewayApp>; catalog: PriceCatalog }>([
    ['full', { app: createGatewayApp({ upstreamFetch: answerAtOnce, priceCatalog: currentPriceCatalog }), catalog: currentPriceCatalog }],
    ['reference', { app: createGatewayApp({ upstreamFetch: answerAtOnce, priceCatalog: reference }), catalog: reference }],
  ]);

  let asking = 0;
  const oneCall = async (app: ReturnType<typeof createGatewayApp>): Promise<number> => {
    const [provider, model] = asked[asking++ % asked.length]!;
    const pending: Promise<unknown>[] = [];
    const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException: () => undefined, props: {} };
    const started = performance.now();
    const response = await app.fetch(
      new Request('http://gateway.bench/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${options.token}` },
        body: JSON.stringify({
          model: `${provider}:${model}`,
          feature: 'chat',
          max_tokens: 16,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      }),
      env,
      ctx as unknown as ExecutionContext,
    );
    if (response.status !== 200) throw new Error(`gateway answered ${response.status} for ${provider}:${model}: ${await response.text()}`);
    await response.arrayBuffer();
    const elapsed = performance.now() - started;
    await Promise.all(pending);
    return elapsed;
  };

  // Warm both: a catalog builds its index on first use (once per isolate), each model's prices convert on first lookup.
  for (const { app } of apps.values()) for (let index = 0; index < WARMUP_CALLS_PER_MODEL * asked.length; index++) await oneCall(app);

  const samples = { full: [] as number[], reference: [] as number[] };
  const roundRatios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['full', 'reference'] as const) : (['reference', 'full'] as const);
    const block = { full: [] as number[], reference: [] as number[] };
    for (const name of order) {
      const { app } = apps.get(name)!;
      for (let index = 0; index < CALLS_PER_BLOCK; index++) block[name].push(await oneCall(app));
    }
    samples.full.push(...block.full);
    samples.reference.push(...block.reference);
    roundRatios.push(percentile(block.full, 50) / percentile(block.reference, 50));
  }

  const full = { p50: percentile(samples.full, 50), p99: percentile(samples.full, 99) };
  const small = { p50: percentile(samples.reference, 50), p99: percentile(samples.reference, 99) };
  const sortedRatios = [...roundRatios].sort((a, b) => a - b);
  console.log(
    `-- added latency by price catalog: the full catalog (${currentPriceCatalog.models().length} priced models) against a reference of the ${asked.length} models asked; ${ROUNDS} rounds of alternating blocks of ${CALLS_PER_BLOCK} sequential calls each, upstream answering at once`,
  );
  console.log(`full catalog                       p50 ${full.p50.toFixed(2)} ms  p99 ${full.p99.toFixed(2)} ms`);
  console.log(`reference catalog                  p50 ${small.p50.toFixed(2)} ms  p99 ${small.p99.toFixed(2)} ms`);
  console.log(
    `ratio full / reference             p50 ${(full.p50 / small.p50).toFixed(3)}; per-round p50 ratios median ${percentile(roundRatios, 50).toFixed(3)} (range ${sortedRatios[0]!.toFixed(2)}–${sortedRatios.at(-1)!.toFixed(2)})`,
  );
}
