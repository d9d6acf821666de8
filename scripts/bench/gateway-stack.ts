/**
 * The gateway as users reach it locally: the whole stack (workers under `wrangler dev`, i.e. workerd,
 * embedded PostgreSQL, proxy), over HTTP. The floor is `GET /health` of the same worker (same HTTP
 * path, no database, no model); a `mock:echo` call on top of it shows what routing, metering and
 * booking add inside the real runtime.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { generateSecrets } from '../lib/dev-vars.ts';
import { repoRoot, startStack, type Stack } from '../lib/stack.ts';
import { portkeyHeaders, startMockUpstream, startPortkey, type MockUpstream } from './portkey.ts';

const CLIENTS = 16;
const SEQUENTIAL_CALLS = 100;
const CALLS_PER_CLIENT = 10;

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
  const stack = await startStack({
    stateDir: dir,
    secrets: generateSecrets(),
    workerVars: {
      GATEWAY_RATE_LIMIT_MAX_REQUESTS: '0',
      API_RATE_LIMIT_MAX_REQUESTS: '0',
      LOG_LEVEL: 'error',
      OPENAI_API_KEY: 'sk-bench-not-a-real-key',
      OPENAI_BASE_URL: `http://127.0.0.1:${upstream.port}/v1`,
      UPSTREAM_ALLOW_LOOPBACK: `127.0.0.1:${upstream.port}`,
    },
  });
  try {
    const tokens: string[] = [];
    for (let index = 0; index < CLIENTS; index++) {
      const session = (await expectOk(
        await fetch(`${stack.apiUrl}/v1/sessions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.developerKey}` },
          body: JSON.stringify({ public_app_id: stack.publicAppId, external_user_id: `bench-${index}-${crypto.randomUUID()}` }),
        }),
      )) as { session_token: string };
      const wallet = (await expectOk(
        await fetch(`${stack.apiUrl}/v1/user/wallet`, { headers: { authorization: `Bearer ${session.session_token}` } }),
      )) as { wallet_id: string };
      await expectOk(
        await fetch(`${stack.apiUrl}/v1/admin/wallets/${wallet.wallet_id}/credit-test-balance`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.adminToken}` },
          body: JSON.stringify({ amount_usd: '100.00000000' }),
        }),
      );
      tokens.push(session.session_token);
    }
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
    await comparePortkey(stack, upstream, tokens[0]!);
  } finally {
    await stack.stop();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Direct, through Faucet (workerd) and through Portkey (Node): the same client, body and upstream. */
async function comparePortkey(stack: Stack, upstream: MockUpstream, token: string): Promise<void> {
  const portkey = await startPortkey();
  try {
    const messages = [{ role: 'user', content: 'Hello from the benchmark' }];
    const post = async (url: string, headers: Record<string, string>, body: object) => {
      const started = performance.now();
      const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
      await expectOk(response);
      const ended = performance.now();
      return { firstByte: upstream.lastArrival() - started, whole: ended - started };
    };
    const routes = {
      direct: () =>
        post(
          `http://127.0.0.1:${upstream.port}/v1/chat/completions`,
          { 'content-type': 'application/json' },
          { model: 'gpt-4o-mini', max_tokens: 64, messages },
        ),
      faucet: () =>
        post(
          `${stack.gatewayUrl}/v1/chat/completions`,
          { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          { model: 'openai:gpt-4o-mini', feature: stack.featureKey, max_tokens: 64, messages },
        ),
      portkey: () =>
        post(`${portkey.url}/v1/chat/completions`, portkeyHeaders(upstream), { model: 'gpt-4o-mini', max_tokens: 64, messages }),
    };
    const results: Record<string, { firstByte: number[]; whole: number[] }> = {};
    for (const [name, run] of Object.entries(routes)) {
      for (let index = 0; index < 10; index++) await run();
      const samples = [];
      for (let index = 0; index < SEQUENTIAL_CALLS; index++) samples.push(await run());
      results[name] = {
        firstByte: samples.map((sample) => sample.firstByte).sort((a, b) => a - b),
        whole: samples.map((sample) => sample.whole).sort((a, b) => a - b),
      };
    }
    const direct = results.direct!;
    console.log(
      `-- added latency beside @portkey-ai/gateway: one HTTP client -> gateway -> the same mock upstream on loopback (${SEQUENTIAL_CALLS} sequential calls each)`,
    );
    console.log(
      `client -> upstream directly         p50 ${percentile(direct.whole, 50).toFixed(2)} ms  p99 ${percentile(direct.whole, 99).toFixed(2)} ms`,
    );
    for (const [name, label] of [
      ['faucet', 'Faucet (workerd, metered)'],
      ['portkey', 'Portkey (Node, no metering)'],
    ] as const) {
      const result = results[name]!;
      const added = (at: number) => (percentile(result.whole, at) - percentile(direct.whole, at)).toFixed(2);
      console.log(
        `${label.padEnd(34)} added p50 ${added(50)} ms  p99 ${added(99)} ms  (to upstream p50 ${(percentile(result.firstByte, 50) - percentile(direct.firstByte, 50)).toFixed(2)} ms)`,
      );
    }
  } finally {
    await portkey.stop();
  }
}
