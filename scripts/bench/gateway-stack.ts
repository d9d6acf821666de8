/**
 * The gateway as users reach it locally: the whole stack (workers under `wrangler dev`, i.e. workerd,
 * embedded PostgreSQL, proxy), over HTTP. The floor is `GET /health` of the same worker (same HTTP
 * path, no database, no model); a `mock:echo` call on top of it shows what routing, metering and
 * booking add inside the real runtime.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { generateSecrets, parseEnvFile } from '../lib/dev-vars.ts';
import { freePort } from '../lib/ports.ts';
import { repoRoot, startStack, type Stack } from '../lib/stack.ts';
import { startDelayPipe, type DelayPipe } from './delay-pipe.ts';
import { startGatewayInMiniflare, startProxyFloorInMiniflare } from './gateway-miniflare.ts';
import { runRttKnob } from './gateway-rtt.ts';
import { portkeyHeaders, startMockUpstream, startPortkey, type MockUpstream } from './portkey.ts';
import { createFundedSessions } from './stack-sessions.ts';

const CLIENTS = 16;
const SEQUENTIAL_CALLS = 100;
/**
 * For comparing two versions of the gateway (not used by `npm run bench` as is):
 * FAUCET_BENCH_COMPARE = another checkout (e.g. a `git worktree` of an earlier commit, its
 * node_modules linked), bundled and run beside this one in the same interleaved rounds;
 * FAUCET_BENCH_ROUNDS = rounds of the comparison beside Portkey; FAUCET_BENCH_SKIP_RTT = 1 skips the
 * round-trip knob (a comparison then takes about 30 s).
 */
const compareCheckout = process.env.FAUCET_BENCH_COMPARE || undefined;
/** Rounds beside Portkey: a p50 of 100 calls moved by ±0.1 ms from run to run, about the margin measured. */
const comparisonRounds = Number(process.env.FAUCET_BENCH_ROUNDS || 400);
const CALLS_PER_CLIENT = 10;
/** Rounds per block for the per-block ratios printed beside the whole run's. */
const BLOCK_ROUNDS = 50;

async function expectOk(response: Response): Promise<unknown> {
  if (!response.ok) throw new Error(`${response.url} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

async function timeEach(count: number, run: () => Promise<unknown>): Promise<number[]> {
  const durations: number[] = [];
  for (let index = 0; index < count; index++) {
    const started = performance.now();
    await run();
    durations.push(performance.now() - started);
  }
  return durations.sort((a, b) => a - b);
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

export async function runGatewayStackBench(): Promise<void> {
  const tmp = join(repoRoot, '.faucet', 'tmp');
  mkdirSync(tmp, { recursive: true });
  const dir = mkdtempSync(join(tmp, 'gateway-bench-'));
  // The mock upstream of the Portkey comparison: the gateway's OpenAI pool pointed at it on loopback.
  const upstream = await startMockUpstream();
  // The workers reach the database proxy through a delay pipe (0 ms until the round-trip knob sets it).
  const proxyTarget = { host: '127.0.0.1', port: await freePort() };
  const pipe = await startDelayPipe(proxyTarget, 0);
  const stack = await startStack({
    stateDir: dir,
    secrets: generateSecrets(),
    ports: { proxy: proxyTarget.port },
    workerVars: {
      DATABASE_WS_PROXY: `127.0.0.1:${pipe.port}`,
      GATEWAY_RATE_LIMIT_MAX_REQUESTS: '0',
      API_RATE_LIMIT_MAX_REQUESTS: '0',
      LOG_LEVEL: 'error',
      OPENAI_API_KEY: 'sk-bench-not-a-real-key',
      OPENAI_BASE_URL: `http://127.0.0.1:${upstream.port}/v1`,
      UPSTREAM_ALLOW_LOOPBACK: `127.0.0.1:${upstream.port}`,
    },
  });
  proxyTarget.port = stack.proxy.port;
  try {
    const tokens = await createFundedSessions(stack, 'stack', CLIENTS);
    const serverTiming: Record<string, number[]> = {};
    const chat = async (token: string) => {
      const response = await fetch(`${stack.gatewayUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({
          model: 'mock:echo',
          feature: stack.featureKey,
          max_tokens: 64,
          messages: [{ role: 'user', content: 'Hello from the benchmark' }],
        }),
      });
      await expectOk(response);
      for (const part of (response.headers.get('server-timing') ?? '').split(', ')) {
        const [name, duration] = part.split(';dur=');
        if (name && duration) (serverTiming[name] ??= []).push(Number(duration));
      }
    };
    const health = async () => expectOk(await fetch(`${stack.gatewayUrl}/health`));

    await timeEach(10, health);
    await timeEach(10, () => chat(tokens[0]!));
    for (const key of Object.keys(serverTiming)) delete serverTiming[key];
    const floor = await timeEach(SEQUENTIAL_CALLS, health);
    const calls = await timeEach(SEQUENTIAL_CALLS, () => chat(tokens[0]!));
    console.log(`-- over HTTP through wrangler dev (workerd), the whole local stack`);
    console.log(
      `GET /health (HTTP + worker floor)  p50 ${percentile(floor, 50).toFixed(2)} ms  p99 ${percentile(floor, 99).toFixed(2)} ms`,
    );
    console.log(
      `POST /v1/chat/completions mock     p50 ${percentile(calls, 50).toFixed(2)} ms  p99 ${percentile(calls, 99).toFixed(2)} ms`,
    );
    console.log(
      `added over the floor               p50 ${(percentile(calls, 50) - percentile(floor, 50)).toFixed(2)} ms  (${SEQUENTIAL_CALLS} sequential calls)`,
    );
    const parts = Object.entries(serverTiming).map(
      ([name, values]) =>
        `${name} ${percentile(
          values.sort((a, b) => a - b),
          50,
        ).toFixed(1)} ms`,
    );
    console.log(`  server-timing p50                ${parts.join('; ')}  (authorize includes opening the database connection)`);
    const started = performance.now();
    await Promise.all(
      tokens.map(async (token) => {
        for (let index = 0; index < CALLS_PER_CLIENT; index++) await chat(token);
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `throughput at ${CLIENTS} concurrent clients   ${Math.round((CLIENTS * CALLS_PER_CLIENT) / seconds)} calls/s  (${CLIENTS * CALLS_PER_CLIENT} calls in ${seconds.toFixed(2)} s)`,
    );
    await comparePortkey(stack, upstream, pipe, tokens[0]!);
    if (process.env.FAUCET_BENCH_SKIP_RTT !== '1') await runRttKnob({ stack, upstream, pipe });
  } finally {
    await stack.stop();
    await pipe.close();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Added latency beside Portkey: one HTTP client -> gateway -> the same mock upstream, Faucet's
 * gateway in workerd with its Durable Objects run by Miniflare directly (gateway-miniflare.ts: the
 * deployed bundle, no dev proxy in front), Portkey on Node. The same gateway under `wrangler dev`
 * (this stack) is measured beside it for information. Calls are interleaved — one round is a call to
 * each route, in a random order per round — so every route sees the same machine load; added
 * latency = a route's p50 − the p50 of the client calling the upstream directly.
 *
 * Each Faucet copy has its own end user (two wallet objects in two runtimes must never share one
 * wallet's lease), funded through the stack's API and warmed so its object holds a lease covering the
 * measured calls; the database connections opened meanwhile are counted at the pipe to show it.
 */
async function comparePortkey(stack: Stack, upstream: MockUpstream, pipe: DelayPipe, token: string): Promise<void> {
  const [miniflareToken] = await createFundedSessions(stack, 'miniflare', 1);
  const miniflare = await startGatewayInMiniflare({
    stateDir: dirname(stack.workerEnvFile),
    env: parseEnvFile(readFileSync(stack.workerEnvFile, 'utf8')),
  });
  // Another checkout's gateway, with its own end user: the same rounds, so the two compare at one load.
  const [compareToken] = compareCheckout ? await createFundedSessions(stack, 'compare', 1) : [];
  const compared = compareCheckout
    ? await startGatewayInMiniflare({
        stateDir: join(dirname(stack.workerEnvFile), 'compare'),
        env: parseEnvFile(readFileSync(stack.workerEnvFile, 'utf8')),
        root: compareCheckout,
      })
    : undefined;
  const portkey = await startPortkey();
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
      miniflare: faucetCall(miniflare.url, miniflareToken!),
      ...(compared ? { compared: faucetCall(compared.url, compareToken!) } : {}),
      miniflareEntry: faucetCall(miniflare.entryUrl, miniflareToken!),
      wranglerDev: faucetCall(stack.gatewayUrl, token),
      portkey: () =>
        post(`${portkey.url}/v1/chat/completions`, portkeyHeaders(upstream), { model: 'gpt-4o-mini', max_tokens: 64, messages }),
      proxyFloor: () => post(proxyFloor.url, { 'content-type': 'application/json' }, { model: 'gpt-4o-mini', max_tokens: 64, messages }),
      objectsFloor: () =>
        post(`${proxyFloor.url}/objects`, { 'content-type': 'application/json' }, { model: 'gpt-4o-mini', max_tokens: 64, messages }),
      miniflareHealth: health(miniflare.url),
      miniflareEntryHealth: health(miniflare.entryUrl),
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
      `   Faucet's calls: warm wallets (each copy its own end user, its object holding a lease); ${connections} database connections opened during the measured rounds (the per-call path opens one per call)`,
    );
    console.log(
      `client -> upstream directly              p50 ${percentile(direct.whole, 50).toFixed(2)} ms  p99 ${percentile(direct.whole, 99).toFixed(2)} ms`,
    );
    for (const [name, label] of [
      ['miniflare', 'Faucet, workerd (Miniflare), metered'],
      ...(compared ? ([['compared', `the same, from ${compareCheckout}`]] as const) : []),
      ['portkey', 'Portkey (Node, no metering)'],
      ['proxyFloor', 'info: a 10-line workerd proxy (floor)'],
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
  } finally {
    await portkey.stop();
    await proxyFloor.stop();
    await miniflare.stop();
    await compared?.stop();
  }
}

/** A small deterministic generator (mulberry32), so a run's orders can be repeated. */
function seededRandom(seed: number): () => number {
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
function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let index = copy.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [copy[index], copy[other]] = [copy[other]!, copy[index]!];
  }
  return copy;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runGatewayStackBench();
}
