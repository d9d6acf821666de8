/**
 * The gateway as users reach it locally: the whole stack (workers under `wrangler dev`, i.e. workerd,
 * embedded PostgreSQL, proxy), over HTTP. The floor is `GET /health` of the same worker (same HTTP
 * path, no database, no model); a `mock:echo` call on top of it shows what routing, metering and
 * booking add inside the real runtime.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { generateSecrets } from '../lib/dev-vars.ts';
import { repoRoot, startStack } from '../lib/stack.ts';

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
  const stack = await startStack({
    stateDir: dir,
    secrets: generateSecrets(),
    workerVars: { GATEWAY_RATE_LIMIT_MAX_REQUESTS: '0', API_RATE_LIMIT_MAX_REQUESTS: '0', LOG_LEVEL: 'error' },
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
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
