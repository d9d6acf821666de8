/**
 * Gateway benchmark: what the gateway adds on top of the model call. The gateway app runs in this
 * Node process against a fresh embedded PostgreSQL reached through the Neon driver and the local
 * WebSocket proxy, exactly as the worker reaches it; the baseline is the `mock` provider called
 * directly in the same process. Printed: added latency p50/p99 (sequential calls), calls per second
 * at 16 concurrent clients, and the database round trips on the critical path — statements before
 * the first upstream byte and after the last, plus the connections opened per call.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { drizzle } from 'drizzle-orm/node-postgres';
import { createGatewayApp } from '../../workers/gateway/src/app.ts';
import { createMockAdapter } from '../../workers/gateway/src/providers/mock/mock-adapter.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { randomToken, sha256Hex } from '#shared/crypto.ts';
import { createDatabase, observeStatements, type Database } from '#shared/db.ts';
import type { Env } from '#shared/env.ts';
import { creditTestBalance } from '#shared/ledger/index.ts';
import { parseWireAmount } from '#shared/money/index.ts';
import { migrate } from '../lib/migrate.ts';
import { freePort } from '../lib/ports.ts';
import { ensureDatabase, startPostgres, withClient } from '../lib/postgres.ts';
import { seed } from '../lib/seed.ts';
import { startWsProxy } from '../lib/ws-proxy.ts';
import { runGatewayStackBench } from './gateway-stack.ts';
import { runCatalogLatency } from './gateway-catalog.ts';

const CLIENTS = 16;
const SEQUENTIAL_CALLS = 200;
const CALLS_PER_CLIENT = 20;
const ROUND_TRIP_CALLS = 20;
const messages = [{ role: 'user', content: 'Summarise the benefits of metered AI access in one sentence.' }];

/** Everything the database and the upstream saw, in order, to place statements around the upstream call. */
type Event = 'statement' | 'connection' | 'upstream';

/** Milliseconds spent opening connections and running statements in the current measurement. */
const timings = { connect: [] as number[], firstStatement: [] as number[], laterStatement: [] as number[] };

function countingDatabase(env: Env, events: Event[]): Database {
  const database = createDatabase(env);
  let firstUse: number | undefined;
  database.pool.on('connect', () => {
    events.push('connection');
    if (firstUse !== undefined) timings.connect.push(performance.now() - firstUse);
  });
  return observeStatements(database, async (run) => {
    events.push('statement');
    const first = firstUse === undefined;
    firstUse ??= performance.now();
    const started = performance.now();
    const result = await run();
    (first ? timings.firstStatement : timings.laterStatement).push(performance.now() - started);
    return result;
  });
}

/** An OpenAI-compatible upstream in this process that answers like the mock, marking when it is reached. */
function markingUpstream(events: Event[]): FetchFunction {
  return async () => {
    events.push('upstream');
    return Response.json({
      id: 'chatcmpl-bench',
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: 'gpt-4o-mini',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Metered access lets users pay for what they use.' }, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: 20, completion_tokens: 11, total_tokens: 31 },
    });
  };
}

function executionContext(pending: Promise<unknown>[]): ExecutionContext {
  return {
    waitUntil: (promise: Promise<unknown>) => void pending.push(promise),
    passThroughOnException: () => undefined,
    props: {},
  } as unknown as ExecutionContext;
}

async function gatewayCall(app: ReturnType<typeof createGatewayApp>, env: Env, token: string, model: string): Promise<void> {
  const pending: Promise<unknown>[] = [];
  const response = await app.fetch(
    new Request('http://gateway.bench/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ model, feature: 'chat', max_tokens: 64, messages }),
    }),
    env,
    executionContext(pending),
  );
  if (response.status !== 200) throw new Error(`gateway answered ${response.status}: ${await response.text()}`);
  await response.arrayBuffer();
  await Promise.all(pending);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
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

/** Sessions for `count` new end users of the demo app, each wallet funded with 100 USD. */
async function createSessions(url: string, appId: string, count: number): Promise<string[]> {
  return withClient(url, async (client) => {
    const tokens: string[] = [];
    for (let index = 0; index < count; index++) {
      const token = randomToken('fvs_');
      const { rows } = await client.query<{ wallet_id: string }>(
        `with user_row as (insert into end_users (app_id, external_user_hash) values ($1, 'bench-' || gen_random_uuid()) returning id),
              wallet as (insert into wallets (kind, end_user_id) select 'user', id from user_row returning id),
              session as (insert into virtual_sessions (token_hash, app_id, end_user_id, expires_at)
                          select $2, $1, id, now() + interval '1 hour' from user_row)
         select id as wallet_id from wallet`,
        [appId, await sha256Hex(token)],
      );
      await creditTestBalance(drizzle(client), {
        walletId: rows[0]!.wallet_id,
        amount: parseWireAmount('100.00000000'),
        requestId: `bench-fund-${index}`,
      });
      tokens.push(token);
    }
    return tokens;
  });
}

/** Statements before the first upstream event and after it, for one call's event list. */
function splitAroundUpstream(events: Event[]): { before: number; after: number; connections: number } {
  const upstreamAt = events.indexOf('upstream');
  const statements = (slice: Event[]) => slice.filter((event) => event === 'statement').length;
  return {
    before: statements(events.slice(0, upstreamAt)),
    after: statements(events.slice(upstreamAt + 1)),
    connections: events.filter((event) => event === 'connection').length,
  };
}

export async function runGatewayBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'faucet-gateway-bench-'));
  const postgres = await startPostgres({ dataDir: join(dir, 'data'), port: await freePort() });
  const proxy = await startWsProxy();
  try {
    await ensureDatabase(postgres.url('postgres'), 'gateway_bench');
    const url = postgres.url('gateway_bench');
    const seeded = await withClient(url, async (client) => {
      await migrate(client);
      return seed(client, { developerKey: 'fdk_bench_key_0123456789abcdef', sessionHashSecret: 'bench-secret' });
    });
    const tokens = await createSessions(url, seeded.appId, CLIENTS);
    const env: Env = {
      ENVIRONMENT: 'test',
      DATABASE_URL: url,
      DATABASE_WS_PROXY: `127.0.0.1:${proxy.port}`,
      OPENAI_API_KEY: 'sk-bench-not-a-real-key',
      GATEWAY_RATE_LIMIT_MAX_REQUESTS: '0',
      MOCK_PROVIDER_LATENCY_MS: '0',
      LOG_LEVEL: 'error',
    };
    const events: Event[] = [];
    const app = createGatewayApp({
      openDatabase: (workerEnv) => countingDatabase(workerEnv, events),
      upstreamFetch: markingUpstream(events),
    });
    const refuseNetwork: FetchFunction = () => Promise.reject(new Error('no network in the benchmark'));
    const mock = createMockAdapter({ fetch: refuseNetwork, upstreamTimeoutMs: 10_000, mockLatencyMs: 0 });
    const directRequest = { model: 'echo', max_tokens: 64, messages: messages.map((message) => ({ ...message, role: 'user' as const })) };

    const measure = async (label: string) => {
      for (const list of Object.values(timings)) list.length = 0;
      // Warm up connections, plans and JIT.
      await timeEach(20, () => gatewayCall(app, env, tokens[0]!, 'mock:echo'));
      await timeEach(20, () => mock.complete({ request: directRequest, credential: { apiKey: null, baseUrl: 'mock://local' } }));
      for (const list of Object.values(timings)) list.length = 0;

      const direct = await timeEach(SEQUENTIAL_CALLS, () =>
        mock.complete({ request: directRequest, credential: { apiKey: null, baseUrl: 'mock://local' } }),
      );
      const through = await timeEach(SEQUENTIAL_CALLS, () => gatewayCall(app, env, tokens[0]!, 'mock:echo'));
      const p = (values: number[], at: number) =>
        percentile(
          [...values].sort((a, b) => a - b),
          at,
        );
      console.log(`-- ${label}`);
      console.log(`mock provider called directly      p50 ${p(direct, 50).toFixed(3)} ms  p99 ${p(direct, 99).toFixed(3)} ms`);
      console.log(`through the gateway                p50 ${p(through, 50).toFixed(2)} ms  p99 ${p(through, 99).toFixed(2)} ms`);
      console.log(
        `added latency                      p50 ${(p(through, 50) - p(direct, 50)).toFixed(2)} ms  p99 ${(p(through, 99) - p(direct, 99)).toFixed(2)} ms  (${SEQUENTIAL_CALLS} sequential calls)`,
      );
      console.log(
        `  of which (p50)                   connection setup ${p(timings.connect, 50).toFixed(1)} ms; authorize statement incl. waiting for the connection ${p(timings.firstStatement, 50).toFixed(1)} ms; settle statement ${p(timings.laterStatement, 50).toFixed(1)} ms`,
      );

      const started = performance.now();
      await Promise.all(
        tokens.map(async (token) => {
          for (let index = 0; index < CALLS_PER_CLIENT; index++) await gatewayCall(app, env, token, 'mock:echo');
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      console.log(
        `throughput at ${CLIENTS} concurrent clients   ${Math.round((CLIENTS * CALLS_PER_CLIENT) / seconds)} calls/s  (${CLIENTS * CALLS_PER_CLIENT} calls in ${seconds.toFixed(2)} s)`,
      );
    };

    console.log(
      `in-process gateway (Node ${process.versions.node}, ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)}), embedded PostgreSQL 18 via the Neon driver and the local WebSocket proxy, mock:echo, no upstream latency`,
    );
    // The local stack now logs in as the driver does against Neon: password pipelined with the startup.
    await measure(
      "database connection as on Neon and in the local stack: password pipelined with the startup (neonConfig.pipelineConnect = 'password')",
    );

    const splits: Array<ReturnType<typeof splitAroundUpstream>> = [];
    for (let index = 0; index < ROUND_TRIP_CALLS; index++) {
      events.length = 0;
      await gatewayCall(app, env, tokens[1]!, 'openai:gpt-4o-mini');
      splits.push(splitAroundUpstream([...events]));
    }
    const worst = (key: 'before' | 'after' | 'connections') => Math.max(...splits.map((split) => split[key]));
    console.log(
      `database round trips per call     before first upstream byte: ${worst('before')} statement(s); after last: ${worst('after')} statement(s); connections opened: ${worst('connections')}`,
    );
    console.log(
      "  (one connection per call: a Worker cannot share a socket between requests, so each call opens the Neon Pool's WebSocket;",
    );
    console.log('   in production Hyperdrive or the Neon HTTP driver remove that setup from the critical path)');
    await runCatalogLatency({ env, token: tokens[3]! });
  } finally {
    await proxy.close();
    await postgres.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  await runGatewayStackBench();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runGatewayBench();
}
