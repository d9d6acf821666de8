/**
 * The whole local stack: embedded PostgreSQL (migrated and seeded), the Neon-style WebSocket proxy,
 * and the three workers under `wrangler dev`. Used by `npm start` and by the Node test suites.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildConsole } from './console-build.ts';
import type { LocalSecrets } from './dev-vars.ts';
import { formatEnvFile } from './dev-vars.ts';
import { migrate } from './migrate.ts';
import { freePort, portOrFree, waitForHttp } from './ports.ts';
import { ensureDatabase, type PostgresServer, startPostgres, withClient } from './postgres.ts';
import { demo, seed, type SeedResult } from './seed.ts';
import { startStripeFake, usesFakeStripe, type StripeFake } from './stripe-fake.ts';
import { workerEnv } from './worker-env.ts';
import { startWsProxy, type WsProxy } from './ws-proxy.ts';

export const repoRoot = join(import.meta.dirname, '..', '..');

export interface StackOptions {
  /** Folder for the database, wrangler state and generated files. */
  stateDir: string;
  /** `.dev.vars` (or a test's secrets): secrets and worker settings, which win over the stack's defaults. */
  secrets: LocalSecrets;
  /** Preferred ports (taken when free); random free ports otherwise. */
  ports?: Partial<Record<'api' | 'gateway' | 'metrics' | 'console' | 'postgres' | 'proxy', number>>;
  /** Also build the console (workers/console) into the state folder and serve it, forwarding `/api/*` to this stack's API. */
  console?: boolean;
  /** Overrides SESSION_TTL_SECONDS, also one in `secrets` (tests). */
  sessionTtlSeconds?: number;
  /** Extra worker variables (e.g. rate limits, MOCK_PROVIDER_LATENCY_MS); they win over `secrets` and the stack's wiring. */
  workerVars?: Record<string, string>;
  /** Echo worker output (npm start) instead of keeping it for failure reports (tests). */
  verbose?: boolean;
}

export interface Stack {
  apiUrl: string;
  gatewayUrl: string;
  metricsUrl: string;
  /** The console, when started with `console: true`. */
  consoleUrl?: string;
  publicAppId: string;
  featureKey: string;
  adminToken: string;
  developerKey: string;
  demoExternalUserId: string;
  databaseUrl: string;
  /** The env file every worker was started with (secrets and settings): to start another copy of a worker the same way. */
  workerEnvFile: string;
  /** The fake Stripe API, when the secrets hold no real Stripe test key (docs/payments.md). */
  stripeFakeUrl?: string;
  seed: SeedResult;
  postgres: PostgresServer;
  proxy: WsProxy;
  stop(): Promise<void>;
}

/**
 * Starts the stack, trying again (with fresh free ports) when a worker fails to come up: on a busy
 * machine a port chosen as free can be taken before wrangler binds it.
 */
export async function startStack(options: StackOptions, attempts = 3): Promise<Stack> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startStackOnce(options);
    } catch (error) {
      if (attempt >= attempts || !(error instanceof WorkerStartError)) throw error;
      console.warn(`faucet: ${error.message.split('\n')[0]}; retrying (${attempt}/${attempts - 1})`);
    }
  }
}

class WorkerStartError extends Error {}

async function startStackOnce(options: StackOptions): Promise<Stack> {
  mkdirSync(options.stateDir, { recursive: true });
  const port = async (name: keyof NonNullable<StackOptions['ports']>) =>
    options.ports?.[name] ? portOrFree(options.ports[name]!) : freePort();
  const ports = {
    postgres: await port('postgres'),
    proxy: await port('proxy'),
    metrics: await port('metrics'),
    api: await port('api'),
    gateway: await port('gateway'),
    console: options.console ? await port('console') : 0,
  };

  const postgres = await startPostgres({ dataDir: join(options.stateDir, 'postgres', 'data'), port: ports.postgres });
  const children: ChildProcess[] = [];
  let proxy: WsProxy | undefined;
  let stripeFake: StripeFake | undefined;
  const stop = async () => {
    await Promise.all(children.map(stopChild));
    await proxy?.close();
    await stripeFake?.close();
    await postgres.stop();
  };

  try {
    await ensureDatabase(postgres.url('postgres'), 'faucet');
    const databaseUrl = postgres.url('faucet');
    const seeded = await withClient(databaseUrl, async (client) => {
      await migrate(client);
      return seed(client, {
        developerKey: options.secrets.DEMO_DEVELOPER_KEY,
        sessionHashSecret: options.secrets.SESSION_HASH_SECRET,
      });
    });
    proxy = await startWsProxy({ port: ports.proxy });

    const urls = {
      api: `http://127.0.0.1:${ports.api}`,
      gateway: `http://127.0.0.1:${ports.gateway}`,
      metrics: `http://127.0.0.1:${ports.metrics}`,
    };
    if (usesFakeStripe(options.secrets.STRIPE_SECRET_KEY)) {
      stripeFake = await startStripeFake({
        webhook: { url: `${urls.api}/v1/webhooks/stripe`, secret: options.secrets.STRIPE_WEBHOOK_SECRET },
      });
    }
    const stripeTarget = stripeFake
      ? { STRIPE_API_HOST: '127.0.0.1', STRIPE_API_PORT: String(stripeFake.port), STRIPE_API_PROTOCOL: 'http' }
      : undefined;
    const { env, ignored } = workerEnv({
      devVars: options.secrets,
      stack: { databaseUrl, wsProxy: `127.0.0.1:${proxy.port}`, apiUrl: urls.api, gatewayUrl: urls.gateway, stripeTarget },
      sessionTtlSeconds: options.sessionTtlSeconds,
      workerVars: options.workerVars,
    });
    if (ignored.length > 0) {
      console.warn(`faucet: ignoring ${ignored.join(', ')} from .dev.vars: the local stack runs its own PostgreSQL`);
    }
    const envFile = join(options.stateDir, 'workers.env');
    writeFileSync(envFile, formatEnvFile(env), { mode: 0o600 });

    // The console's bundle is built while PostgreSQL and the workers start (a few seconds).
    const consoleConfig = options.console ? buildConsole(join(options.stateDir, 'console-dist')) : undefined;
    consoleConfig?.catch(() => {});

    const wrangler = (
      name: string,
      environment: string | undefined,
      listenPort: number,
      inspectorPort: number,
      config?: { path: string; vars: Record<string, string> },
    ) => {
      const args = [
        join(repoRoot, 'node_modules', 'wrangler', 'bin', 'wrangler.js'),
        'dev',
        '-c',
        config?.path ?? join(repoRoot, 'wrangler.toml'),
        ...(environment ? ['--env', environment] : []),
        ...Object.entries(config?.vars ?? {}).flatMap(([key, value]) => ['--var', `${key}:${value}`]),
        '--ip',
        '127.0.0.1',
        '--port',
        String(listenPort),
        // Each dev process needs its own inspector port; they all default to 9229.
        '--inspector-port',
        String(inspectorPort),
        ...(config ? [] : ['--env-file', envFile]),
        '--persist-to',
        // One folder per worker: workerd processes sharing one SQLite state folder hit SQLITE_BUSY.
        join(options.stateDir, 'wrangler-state', name),
        '--show-interactive-dev-session=false',
        '--log-level',
        // `log` shows the workers' own console output (their JSON log lines) in verbose mode.
        options.verbose ? 'log' : 'warn',
      ];
      const child = spawn(process.execPath, args, {
        cwd: repoRoot,
        env: {
          ...process.env,
          // Each stack has its own registry, so a test stack never binds to `npm start`'s workers.
          WRANGLER_REGISTRY_PATH: join(options.stateDir, 'wrangler-registry'),
          WRANGLER_SEND_METRICS: 'false',
          CI: 'true',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const output: string[] = [];
      const keep = (chunk: Buffer) => {
        const text = chunk.toString();
        if (options.verbose) process.stdout.write(text.replace(/^/gm, `[${name}] `));
        output.push(text);
        if (output.length > 200) output.shift();
      };
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      children.push(child);
      return { child, output };
    };

    const workers = [
      { name: 'metrics', ...wrangler('metrics', 'metrics', ports.metrics, await freePort()), url: urls.metrics },
      { name: 'api', ...wrangler('api', undefined, ports.api, await freePort()), url: urls.api },
      { name: 'gateway', ...wrangler('gateway', 'gateway', ports.gateway, await freePort()), url: urls.gateway },
    ];
    const consoleUrl = consoleConfig ? `http://127.0.0.1:${ports.console}` : undefined;
    if (consoleConfig && consoleUrl) {
      const config = { path: await consoleConfig, vars: { API_ORIGIN: urls.api } };
      workers.push({ name: 'console', ...wrangler('console', undefined, ports.console, await freePort(), config), url: consoleUrl });
    }
    await Promise.all(
      workers.map(async (worker) => {
        const exited = new Promise<never>((_resolve, reject) =>
          worker.child.once('exit', (code) => reject(new Error(`exited with code ${code}`))),
        );
        try {
          await Promise.race([waitForHttp(`${worker.url}/health`, 120_000), exited]);
        } catch (error) {
          throw new WorkerStartError(`${worker.name} worker did not start: ${(error as Error).message}\n${worker.output.join('')}`);
        }
      }),
    );

    return {
      apiUrl: urls.api,
      gatewayUrl: urls.gateway,
      metricsUrl: urls.metrics,
      ...(consoleUrl ? { consoleUrl } : {}),
      publicAppId: demo.publicAppId,
      featureKey: demo.featureKey,
      adminToken: options.secrets.ADMIN_TOKEN,
      developerKey: options.secrets.DEMO_DEVELOPER_KEY,
      demoExternalUserId: demo.externalUserId,
      databaseUrl,
      workerEnvFile: envFile,
      ...(stripeFake ? { stripeFakeUrl: stripeFake.url } : {}),
      seed: seeded,
      postgres,
      proxy,
      stop,
    };
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
