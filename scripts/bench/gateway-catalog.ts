/**
 * The gateway's added latency with the full price catalog against a reference catalog of only the
 * models asked ("the gateway's added latency with the larger catalog within noise of before; model
 * lookup must not scan"). Two copies of the gateway in workerd by Miniflare directly, each with its
 * Durable Objects, identical but for the catalog they are given (`GatewayDependencies.priceCatalog`,
 * the seam tests and benchmarks use; production always has the current catalog) and an upstream in
 * the isolate that answers at once, so a call's whole time is what the gateway adds over HTTP:
 * the wallet object's authorize, hold bounds, output caps, rating, the settlement. Each copy has its
 * own funded end user, warmed so its wallet holds a lease. Calls go in blocks that alternate between
 * the two (the order flipped every round), so a change of load on the shared machine falls on both
 * alike. Printed: p50 and p99 of each, the ratio of the p50s and the median of the per-round ratios.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { currentPriceCatalog } from '#shared/rating/index.ts';
import { parseEnvFile } from '../lib/dev-vars.ts';
import { repoRoot, type Stack } from '../lib/stack.ts';
import { startGatewayInMiniflare } from './gateway-miniflare.ts';
import { createFundedSessions } from './stack-sessions.ts';

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

/** Not keys: the upstream is a function in the isolate. */
const poolKeys = {
  OPENAI_API_KEY: 'sk-bench-not-a-real-key',
  DEEPSEEK_API_KEY: 'sk-bench-not-a-real-key',
  GROQ_API_KEY: 'gsk_bench_not_a_real_key_0123456789',
  OPENROUTER_API_KEY: 'sk-or-v1-bench-not-a-real-key',
};

const completion = JSON.stringify({
  id: 'chatcmpl-catalog-bench',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'bench',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 14, completion_tokens: 1, total_tokens: 15 },
});

/** The same answer streamed, as a provider streams when asked (a call held for a quota is read as a stream). */
const completionEvents = (() => {
  const { choices, usage, ...head } = JSON.parse(completion);
  const chunk = (fields: object) => `data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', ...fields })}\n\n`;
  return [
    chunk({ choices: [{ index: 0, delta: choices[0].message, finish_reason: null }] }),
    chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage }),
    'data: [DONE]\n\n',
  ].join('');
})();

/**
 * The gateway's entry with another catalog and the in-isolate upstream, written at run time beside
 * the bundle (a module in the repo that nothing imports would only serve this benchmark).
 */
function writeEntry(dir: string, catalog: 'full' | 'reference'): string {
  const from = (path: string) => JSON.stringify(join(repoRoot, path));
  const priceCatalog = catalog === 'full' ? 'currentPriceCatalog' : `referenceCatalog(${JSON.stringify(asked)})`;
  const entry = join(dir, `catalog-${catalog}`, 'index.ts');
  mkdirSync(dirname(entry), { recursive: true });
  writeFileSync(
    entry,
    [
      `import { createGatewayApp } from ${from('workers/gateway/src/app.ts')};`,
      `import { currentPriceCatalog } from ${from('workers/shared/rating/index.ts')};`,
      `import { referenceCatalog } from ${from('scripts/bench/catalog-lookup.ts')};`,
      `export { WalletObject } from ${from('workers/gateway/src/wallet/wallet-object.ts')};`,
      `const completion = ${JSON.stringify(completion)};`,
      `const completionEvents = ${JSON.stringify(completionEvents)};`,
      "const answerAtOnce = async (request) => (await request.text()).includes('\"stream\":true') ? new Response(completionEvents, { headers: { 'content-type': 'text/event-stream' } }) : new Response(completion, { headers: { 'content-type': 'application/json' } });",
      `export default createGatewayApp({ upstreamFetch: answerAtOnce, priceCatalog: ${priceCatalog} });`,
      '',
    ].join('\n'),
  );
  return entry;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

export async function runCatalogLatency(stack: Stack): Promise<void> {
  const stateDir = join(dirname(stack.workerEnvFile), 'catalog');
  const env = { ...parseEnvFile(readFileSync(stack.workerEnvFile, 'utf8')), ...poolKeys };
  const [fullToken, referenceToken] = await createFundedSessions(stack, 'catalog', 2);
  const start = (catalog: 'full' | 'reference') =>
    startGatewayInMiniflare({ stateDir: join(stateDir, catalog), env, gatewayEntry: writeEntry(stateDir, catalog) });
  const gateways = { full: await start('full'), reference: await start('reference') };
  const tokens = { full: fullToken!, reference: referenceToken! };
  try {
    let asking = 0;
    const oneCall = async (name: 'full' | 'reference'): Promise<number> => {
      const [provider, model] = asked[asking++ % asked.length]!;
      const started = performance.now();
      const response = await fetch(`${gateways[name].url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens[name]}` },
        body: JSON.stringify({
          model: `${provider}:${model}`,
          feature: stack.featureKey,
          max_tokens: 16,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      if (response.status !== 200)
        throw new Error(`gateway answered ${response.status} for ${provider}:${model}: ${await response.text()}`);
      await response.arrayBuffer();
      return performance.now() - started;
    };

    // Warm both: the wallet takes its lease, a catalog builds its index on first use, each model's prices convert on first lookup.
    for (const name of ['full', 'reference'] as const) {
      for (let index = 0; index < WARMUP_CALLS_PER_MODEL * asked.length; index++) await oneCall(name);
    }
    const samples = { full: [] as number[], reference: [] as number[] };
    const roundRatios: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['full', 'reference'] as const) : (['reference', 'full'] as const);
      const block = { full: [] as number[], reference: [] as number[] };
      for (const name of order) for (let index = 0; index < CALLS_PER_BLOCK; index++) block[name].push(await oneCall(name));
      samples.full.push(...block.full);
      samples.reference.push(...block.reference);
      roundRatios.push(percentile(block.full, 50) / percentile(block.reference, 50));
    }

    const full = { p50: percentile(samples.full, 50), p99: percentile(samples.full, 99) };
    const small = { p50: percentile(samples.reference, 50), p99: percentile(samples.reference, 99) };
    const sortedRatios = [...roundRatios].sort((a, b) => a - b);
    console.log(
      `-- added latency by price catalog, workerd (Miniflare) with the wallet object: the full catalog (${currentPriceCatalog.models().length} priced models) against a reference of the ${asked.length} models asked; ${ROUNDS} rounds of alternating blocks of ${CALLS_PER_BLOCK} sequential calls each over HTTP, upstream in the isolate answering at once`,
    );
    console.log(`full catalog                       p50 ${full.p50.toFixed(2)} ms  p99 ${full.p99.toFixed(2)} ms`);
    console.log(`reference catalog                  p50 ${small.p50.toFixed(2)} ms  p99 ${small.p99.toFixed(2)} ms`);
    console.log(
      `ratio full / reference             p50 ${(full.p50 / small.p50).toFixed(3)}; per-round p50 ratios median ${percentile(roundRatios, 50).toFixed(3)} (range ${sortedRatios[0]!.toFixed(2)}–${sortedRatios.at(-1)!.toFixed(2)})`,
    );
  } finally {
    await gateways.full.stop();
    await gateways.reference.stop();
  }
}
