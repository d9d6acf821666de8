/**
 * Added latency beside Portkey: one HTTP client -> gateway -> the same mock upstream, Faucet's
 * gateway in workerd with its Durable Objects run by Miniflare directly (gateway-miniflare.ts: the
 * deployed bundle, no dev proxy in front), Portkey on Node. The same gateway under `wrangler dev`
 * (the stack) is measured beside it for information, and so are the runtime's own floors. Calls are
 * interleaved — one round is a call to each route, in a random order per round — so every route sees
 * the same machine load; added latency = a route's p50 − the p50 of the client calling the upstream
 * directly.
 *
 * Each Faucet copy has its own end user (two wallet objects in two runtimes must never share one
 * wallet's lease), funded through the stack's API and warmed so its object holds a lease covering the
 * measured calls; the database connections opened meanwhile are counted at the pipe to show it.
 */
import { dirname } from 'node:path';
import { loadavg } from 'node:os';
import type { Stack } from '../lib/stack.ts';
import type { DelayPipe } from './delay-pipe.ts';
import { startProxyFloorInMiniflare, type MiniflareGateway } from './gateway-miniflare.ts';
import { portkeyHeaders, type MockUpstream, type Portkey } from './portkey.ts';

/** Rounds beside Portkey: a p50 of 100 calls moved by ±0.1 ms from run to run, about the margin measured. */
const comparisonRounds = Number(process.env.FAUCET_BENCH_ROUNDS || 400);
/** Rounds per block for the per-block ratios printed beside the whole run's. */
const BLOCK_ROUNDS = 50;

/** A gateway copy with the session of its own warm end user. */
export interface FaucetCopy {
  gateway: MiniflareGateway;
  token: string;
  /** How the printed line names it. */
  label: string;
}

export interface LatencyComparison {
  stack: Stack;
  upstream: MockUpstream;
  pipe: DelayPipe;
  portkey: Portkey;
  /** The deployed bundle in workerd. */
  faucet: FaucetCopy;
  /** Another checkout's gateway, measured in the same rounds (FAUCET_BENCH_COMPARE). */
  compared?: FaucetCopy;
  /** A session for the gateway under `wrangler dev`. */
  wranglerDevToken: string;
}

async function expectOk(response: Response): Promise<unknown> {
  if (!response.ok) throw new Error(`${response.url} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

export async function compareLatency(options: LatencyComparison): Promise<void> {
  const { stack, upstream, pipe, portkey, faucet, compared } = options;
  const proxyFloor = await startProxyFloorInMiniflare(
    `http://127.0.0.1:${upstream.port}/v1/chat/completions`,
    dirname(stack.workerEnvFile),
  );
  try {
    const messages = [{ role: 'user', content: 'Hello from the benchmark' }];
    const post = async (url: string, headers: Record<string, string>, body: object) => {
      const started = performance.now();
      const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
      await expectOk(response);
      const ended = performance.now();
      return { firstByte: upstream.lastArrival() - started, whole: ended - started };
    };
    const faucetCall = (gatewayUrl: string, sessionToken: string) => () =>
      post(
        `${gatewayUrl}/v1/chat/completions`,
        { 'content-type': 'application/json', authorization: `Bearer ${sessionToken}` },
        { model: 'openai:gpt-4o-mini', feature: stack.featureKey, max_tokens: 64, messages },
      );
    const health = (gatewayUrl: string) => async () => {
      const started = performance.now();
      await expectOk(await fetch(`${gatewayUrl}/health`));
      const whole = performance.now() - started;
      return { firstByte: whole, whole };
    };
    const routes: Record<string, () => Promise<{ firstByte: number; whole: number }>> = {
      direct: () =>
        post(
          `http://127.0.0.1:${upstream.port}/v1/chat/completions`,
          { 'content-type': 'application/json' },
          { model: 'gpt-4o-mini', max_tokens: 64, messages },
        ),
      miniflare: faucetCall(faucet.gateway.url, faucet.token),
      // The compared copy gets the same traffic as this one (its entry worker's calls and health too):
      // a copy called twice a round and the other once measured the first about 0.5–0.8 ms faster with
      // the same code, in either position.
      ...(compared
        ? {
            compared: faucetCall(compared.gateway.url, compared.token),
            comparedEntry: faucetCall(compared.gateway.entryUrl, compared.token),
            comparedEntryHealth: health(compared.gateway.entryUrl),
            comparedHealth: health(compared.gateway.url),
          }
        : {}),
      miniflareEntry: faucetCall(faucet.gateway.entryUrl, faucet.token),
      wranglerDev: faucetCall(stack.gatewayUrl, options.wranglerDevToken),
      portkey: () =>
        post(`${portkey.url}/v1/chat/completions`, portkeyHeaders(upstream), { model: 'gpt-4o-mini', max_tokens: 64, messages }),
      proxyFloor: () => post(proxyFloor.url, { 'content-type': 'application/json' }, { model: 'gpt-4o-mini', max_tokens: 64, messages }),
      writeFloor: () =>
        post(`${proxyFloor.url}/write`, { 'content-type': 'application/json' }, { model: 'gpt-4o-mini', max_tokens: 64, messages }),
      objectsFloor: () =>
        post(`${proxyFloor.url}/objects`, { 'content-type': 'application/json' }, { model: 'gpt-4o-mini', max_tokens: 64, messages }),
      miniflareHealth: health(faucet.gateway.url),
      miniflareEntryHealth: health(faucet.gateway.entryUrl),
      wranglerDevHealth: health(stack.gatewayUrl),
    };
    const names = Object.keys(routes);
    const call = (name: string) => (routes[name] as () => Promise<{ firstByte: number; whole: number }>)();
    // Warm-up: the Miniflare copy's wallet takes its lease; every route's connections are open.
    for (let round = 0; round < 20; round++) for (const name of names) await call(name);
    const samples = Object.fromEntries(names.map((name) => [name, { firstByte: [] as number[], whole: [] as number[] }]));
    const inOrder = Object.fromEntries(names.map((name) => [name, [] as number[]]));
    const connectionsBefore = pipe.connections();
    const loadBefore = loadavg()[0]!;
    // Each round in its own random order: a route's call never always follows the same route, so what
    // one gateway still does after its answer (Faucet's settlement, under waitUntil) lands on every
    // route alike. (A fixed rotation had Portkey always follow Faucet under wrangler dev.)
    const random = seededRandom(19);
    for (let round = 0; round < comparisonRounds; round++) {
      for (const name of shuffled(names, random)) {
        const sample = await call(name);
        samples[name]!.firstByte.push(sample.firstByte);
        samples[name]!.whole.push(sample.whole);
        inOrder[name]!.push(sample.whole);
      }
    }
    const connections = pipe.connections() - connectionsBefore;
    for (const sample of Object.values(samples)) {
      sample.firstByte.sort((a, b) => a - b);
      sample.whole.sort((a, b) => a - b);
    }
    const direct = samples.direct!;
    const addedP50 = (name: string) => percentile(samples[name]!.whole, 50) - percentile(direct.whole, 50);
    console.log(
      `-- added latency beside @portkey-ai/gateway at 0 ms database RTT: one HTTP client -> gateway -> the same mock upstream on loopback (${comparisonRounds} rounds, one call to each route per round in a random order; load average ${loadBefore.toFixed(1)} -> ${loadavg()[0]!.toFixed(1)})`,
    );
    console.log(
      `   Faucet's calls: warm wallets (each copy its own end user, its object holding a lease); ${connections} database connections opened during the measured rounds (a warm wallet's call opens none)`,
    );
    console.log(
      `client -> upstream directly              p50 ${percentile(direct.whole, 50).toFixed(2)} ms  p99 ${percentile(direct.whole, 99).toFixed(2)} ms`,
    );
    for (const [name, label] of [
      ['miniflare', faucet.label],
      ...(compared ? ([['compared', compared.label]] as const) : []),
      ['portkey', 'Portkey (Node, no metering)'],
      ['proxyFloor', 'info: a 10-line workerd proxy (floor)'],
      ['writeFloor', 'info: that + 1 confirmed write before'],
      ['objectsFloor', 'info: that + 2 object calls, 2 writes'],
      ['miniflareEntry', "info: Faucet via Miniflare's entry worker"],
      ['wranglerDev', 'info: Faucet under wrangler dev'],
    ] as const) {
      const result = samples[name]!;
      const added = (at: number) => (percentile(result.whole, at) - percentile(direct.whole, at)).toFixed(2);
      console.log(
        `${label.padEnd(42)} added p50 ${added(50)} ms  p99 ${added(99)} ms  (to upstream p50 ${(percentile(result.firstByte, 50) - percentile(direct.firstByte, 50)).toFixed(2)} ms)`,
      );
    }
    const floor = (name: string) => `${(percentile(samples[name]!.whole, 50) - percentile(direct.whole, 50)).toFixed(2)} ms`;
    console.log(
      `GET /health over direct, p50 (no database, no object): workerd ${floor('miniflareHealth')}, via Miniflare's entry worker ${floor('miniflareEntryHealth')}, under wrangler dev ${floor('wranglerDevHealth')}`,
    );
    const ratio = addedP50('miniflare') / addedP50('portkey');
    console.log(
      `Faucet's added p50 (workerd, Miniflare) = ${ratio.toFixed(2)} × Portkey's (target <= 1 × Portkey's, same run): ${ratio <= 1 ? 'PASS' : 'MISS'}`,
    );
    const p99 = (name: string) => percentile(samples[name]!.whole, 99);
    console.log(
      `Faucet's p99 ${p99('miniflare').toFixed(2)} ms, Portkey's p99 ${p99('portkey').toFixed(2)} ms (target: Faucet's <= Portkey's, same run): ${p99('miniflare') <= p99('portkey') ? 'PASS' : 'MISS'}`,
    );
    // The same ratio per block of rounds: how far it moves within one run.
    const blockRatios: number[] = [];
    for (let start = 0; start + BLOCK_ROUNDS <= comparisonRounds; start += BLOCK_ROUNDS) {
      const blockP50 = (name: string) =>
        percentile(
          inOrder[name]!.slice(start, start + BLOCK_ROUNDS).sort((a, b) => a - b),
          50,
        );
      blockRatios.push((blockP50('miniflare') - blockP50('direct')) / (blockP50('portkey') - blockP50('direct')));
    }
    blockRatios.sort((a, b) => a - b);
    if (blockRatios.length > 1) {
      console.log(
        `   per block of ${BLOCK_ROUNDS} rounds: median ${percentile(blockRatios, 50).toFixed(2)} × (range ${blockRatios[0]!.toFixed(2)}–${blockRatios.at(-1)!.toFixed(2)}, ${blockRatios.filter((value) => value <= 1).length} of ${blockRatios.length} blocks <= 1)`,
      );
    }
    console.log(`   for information, under wrangler dev: ${(addedP50('wranglerDev') / addedP50('portkey')).toFixed(2)} × Portkey's`);
    // What is left for Faucet's own work when a call's reservation must be durable before the upstream.
    console.log(
      `   the workerd proxy with one confirmed write before the upstream (no other work): ${(addedP50('writeFloor') / addedP50('portkey')).toFixed(2)} × Portkey's; Faucet's own work above it ${(addedP50('miniflare') - addedP50('writeFloor')).toFixed(2)} ms, the write ${(addedP50('writeFloor') - addedP50('proxyFloor')).toFixed(2)} ms`,
    );
  } finally {
    await proxyFloor.stop();
  }
}

/** A small deterministic generator (mulberry32), so a run's orders can be repeated. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A copy of `items` in random order (Fisher–Yates). */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let index = copy.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [copy[index], copy[other]] = [copy[other]!, copy[index]!];
  }
  return copy;
}
