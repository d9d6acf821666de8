/**
 * The gateway part of `npm run bench`, on the path production takes: the gateway in workerd with its
 * Durable Objects, every call decided by the end user's wallet object, sessions made through the
 * API (their tokens name the wallet). One local stack (workers under `wrangler dev`, embedded
 * PostgreSQL, the WebSocket proxy behind a delay pipe) provides the database and the sessions; on
 * top of it:
 * - the stack's own gateway over HTTP (`wrangler dev`): its `GET /health` floor and a `mock:echo` call;
 * - the deployed bundle in workerd by Miniflare directly beside `@portkey-ai/gateway`, both in front of
 *   the same mock upstream: added latency (gateway-compare.ts), throughput (gateway-throughput.ts);
 * - the full price catalog against a reference of a few models (gateway-catalog.ts);
 * - the database round-trip knob (gateway-rtt.ts).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generateSecrets, parseEnvFile } from '../lib/dev-vars.ts';
import { freePort } from '../lib/ports.ts';
import { repoRoot, startStack, type Stack } from '../lib/stack.ts';
import { type DelayPipe, startDelayPipe } from './delay-pipe.ts';
import { runCatalogLatency } from './gateway-catalog.ts';
import { compareLatency, type FaucetCopy } from './gateway-compare.ts';
import { startGatewayInMiniflare, startProxyFloorInMiniflare } from './gateway-miniflare.ts';
import { runRttKnob } from './gateway-rtt.ts';
import { measureThroughput } from './gateway-throughput.ts';
import { portkeyHeaders, startMockUpstream, startPortkey, type MockUpstream } from './portkey.ts';
import { createFundedSessions } from './stack-sessions.ts';

const SEQUENTIAL_CALLS = 100;
/** End users of the throughput's "many end users" (one per client at the highest concurrency). */
const THROUGHPUT_END_USERS = 64;
/**
 * For comparing two versions of the gateway (not used by `npm run bench` as is):
 * FAUCET_BENCH_COMPARE = another checkout (e.g. a `git worktree` of an earlier commit, its
 * node_modules linked), bundled and run beside this one in the same interleaved rounds;
 * FAUCET_BENCH_ROUNDS = rounds of the comparison beside Portkey; FAUCET_BENCH_SKIP_RTT = 1 skips the
 * round-trip knob; FAUCET_BENCH_ONLY_LATENCY = 1 runs the comparison beside Portkey alone.
 */
const compareCheckout = process.env.FAUCET_BENCH_COMPARE || undefined;
const onlyLatency = process.env.FAUCET_BENCH_ONLY_LATENCY === '1';

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

const chatBody = (model: string, feature?: string) =>
  JSON.stringify({
    model,
    ...(feature ? { feature } : {}),
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Hello from the benchmark' }],
  });

/** The stack's gateway under `wrangler dev`: the `GET /health` floor, a `mock:echo` call on it, and its server-timing. */
async function measureWranglerDev(stack: Stack, token: string): Promise<void> {
  const serverTiming: Record<string, number[]> = {};
  const chat = async () => {
    const response = await fetch(`${stack.gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: chatBody('mock:echo', stack.featureKey),
    });
    await expectOk(response);
    for (const part of (response.headers.get('server-timing') ?? '').split(', ')) {
      const [name, duration] = part.split(';dur=');
      if (name && duration) (serverTiming[name] ??= []).push(Number(duration));
    }
  };
  const health = async () => expectOk(await fetch(`${stack.gatewayUrl}/health`));

  await timeEach(10, health);
  await timeEach(10, chat);
  for (const key of Object.keys(serverTiming)) delete serverTiming[key];
  const floor = await timeEach(SEQUENTIAL_CALLS, health);
  const calls = await timeEach(SEQUENTIAL_CALLS, chat);
  const p = (values: number[], at: number) => percentile(values, at).toFixed(2);
  console.log('-- over HTTP through wrangler dev (workerd with the dev proxy in front), the whole local stack, a warm wallet');
  console.log(`GET /health (HTTP + worker floor)  p50 ${p(floor, 50)} ms  p99 ${p(floor, 99)} ms`);
  console.log(`POST /v1/chat/completions mock     p50 ${p(calls, 50)} ms  p99 ${p(calls, 99)} ms`);
  console.log(
    `added over the floor               p50 ${(percentile(calls, 50) - percentile(floor, 50)).toFixed(2)} ms  (${SEQUENTIAL_CALLS} sequential calls)`,
  );
  const parts = Object.entries(serverTiming).map(
    ([name, values]) =>
      `${name} ${p(
        values.sort((a, b) => a - b),
        50,
      )} ms`,
  );
  console.log(`  server-timing p50                ${parts.join('; ')}  (authorize: the wallet object's decision)`);
}

/** The deployed bundle (or another checkout's) in workerd, with its own funded end user. */
export async function startCopy(stack: Stack, label: string, root?: string): Promise<FaucetCopy> {
  const [token] = await createFundedSessions(stack, root ? 'compare' : 'miniflare', 1);
  const gateway = await startGatewayInMiniflare({
    stateDir: join(dirname(stack.workerEnvFile), root ? 'compare' : 'miniflare'),
    env: parseEnvFile(readFileSync(stack.workerEnvFile, 'utf8')),
    ...(root ? { root } : {}),
  });
  return { gateway, token: token!, label };
}

/** Many end users and one hot end user, beside Portkey and the upstream called directly. */
async function runThroughput(stack: Stack, upstream: MockUpstream, portkeyUrl: string, faucet: FaucetCopy): Promise<void> {
  const tokens = await createFundedSessions(stack, 'throughput', THROUGHPUT_END_USERS);
  const post = (url: string, headers: Record<string, string>, body: string) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const faucetCall = (token: string) =>
    post(
      `${faucet.gateway.url}/v1/chat/completions`,
      { authorization: `Bearer ${token}` },
      chatBody('openai:gpt-4o-mini', stack.featureKey),
    );
  const floor = await startProxyFloorInMiniflare(`http://127.0.0.1:${upstream.port}/v1/chat/completions`, dirname(stack.workerEnvFile));
  try {
    await measureThroughput({
      direct: () => post(`http://127.0.0.1:${upstream.port}/v1/chat/completions`, {}, chatBody('gpt-4o-mini')),
      portkey: () => post(`${portkeyUrl}/v1/chat/completions`, portkeyHeaders(upstream), chatBody('gpt-4o-mini')),
      faucetManyUsers: (client) => faucetCall(tokens[client % tokens.length]!),
      faucetHotUser: () => faucetCall(faucet.token),
      writeFloor: (client) => post(`${floor.url}/write?wallet=client-${client}`, {}, chatBody('gpt-4o-mini')),
    });
  } finally {
    await floor.stop();
  }
}

/** What a bench on the local stack gets: the stack, the mock upstream it calls, the delay pipe to its database. */
interface BenchStack {
  stack: Stack;
  upstream: MockUpstream;
  pipe: DelayPipe;
}

/**
 * `run` against a local stack whose workers reach the database through a delay pipe and whose OpenAI
 * pool (and `extraWorkerVars`' pools) point at one mock upstream; all stopped and removed after.
 */
export async function withBenchStack(
  extraWorkerVars: (upstream: MockUpstream) => Record<string, string>,
  run: (bench: BenchStack) => Promise<void>,
): Promise<void> {
  const tmp = join(repoRoot, '.faucet', 'tmp');
  mkdirSync(tmp, { recursive: true });
  const dir = mkdtempSync(join(tmp, 'gateway-bench-'));
  // The workers reach the database proxy through a delay pipe (0 ms until the round-trip knob sets it).
  const proxyTarget = { host: '127.0.0.1', port: await freePort() };
  const pipe = await startDelayPipe(proxyTarget, 0);
  // The mock upstream: the gateway's OpenAI pool pointed at it on loopback. It reads the pipe's round
  // trips as each call reaches it, so the knob counts those made before the first upstream byte.
  const upstream = await startMockUpstream(() => pipe.roundTrips());
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
      ...extraWorkerVars(upstream),
    },
  });
  proxyTarget.port = stack.proxy.port;
  try {
    await run({ stack, upstream, pipe });
  } finally {
    await stack.stop();
    await pipe.close();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runGatewayStackBench(): Promise<void> {
  await withBenchStack(
    () => ({}),
    async ({ stack, upstream, pipe }) => {
      const [wranglerDevToken] = await createFundedSessions(stack, 'stack', 1);
      if (!onlyLatency) await measureWranglerDev(stack, wranglerDevToken!);
      const faucet = await startCopy(stack, 'Faucet, workerd (Miniflare), metered');
      const compared = compareCheckout ? await startCopy(stack, `the same, from ${compareCheckout}`, compareCheckout) : undefined;
      const portkey = await startPortkey();
      try {
        await compareLatency({
          stack,
          upstream,
          pipe,
          portkey,
          faucet,
          wranglerDevToken: wranglerDevToken!,
          ...(compared ? { compared } : {}),
        });
        if (!onlyLatency) await runThroughput(stack, upstream, portkey.url, faucet);
      } finally {
        await portkey.stop();
        await faucet.gateway.stop();
        await compared?.gateway.stop();
      }
      if (!onlyLatency) await runCatalogLatency(stack);
      if (!onlyLatency && process.env.FAUCET_BENCH_SKIP_RTT !== '1') await runRttKnob({ stack, upstream, pipe });
    },
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runGatewayStackBench();
}
