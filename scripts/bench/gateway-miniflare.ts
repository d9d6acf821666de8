/**
 * Faucet's gateway in workerd through Miniflare directly, without `wrangler dev` in front: the bundle
 * `wrangler deploy --dry-run` makes (what is deployed), the gateway and the metrics worker in one
 * Miniflare instance so the gateway's Durable Object bindings resolve as in production (WALLET in the
 * gateway itself, RATE_LIMITER and METRICS in `faucet-metrics` by script name), SQLite-backed objects
 * persisted to disk, requests taken on workerd's own socket for the gateway (Miniflare's direct
 * socket). `wrangler dev` adds its own proxy worker (a second Miniflare instance) and Miniflare's entry
 * worker in front of the user worker; this is the runtime the Portkey comparison names, with
 * nothing of the dev tooling on the request path (the entry worker's URL is given too, to show it).
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { convertV4MiniflareOptions, Miniflare, type V4WorkerOptions } from 'miniflare';
import { unstable_readConfig } from 'wrangler';
import { freePort } from '../lib/ports.ts';
import { repoRoot } from '../lib/stack.ts';

export interface MiniflareGateway {
  /** workerd's own socket for the gateway worker: nothing but the runtime in front of it. */
  url: string;
  /** Miniflare's entry worker, which forwards to the gateway (dev tooling: pretty errors, the `cf` object). */
  entryUrl: string;
  stop(): Promise<void>;
}

/** The wrangler.toml environments run here, the gateway first (it answers the HTTP port). */
const environments = ['gateway', 'metrics'] as const;

function bundle(root: string, environment: string, outdir: string, entry?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        join(root, 'node_modules', 'wrangler', 'bin', 'wrangler.js'),
        'deploy',
        ...(entry ? [entry] : []),
        '--dry-run',
        '--outdir',
        outdir,
        '--env',
        environment,
      ],
      { cwd: root, env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk) => (stderr += String(chunk)));
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`wrangler dry-run of ${environment} failed:\n${stderr.slice(-2000)}`)),
    );
  });
}

/** Without wrangler's warnings about top-level settings the environments do not inherit (by design here). */
function quietly<T>(read: () => T): T {
  const previous = process.env.WRANGLER_LOG;
  process.env.WRANGLER_LOG = 'error';
  try {
    return read();
  } finally {
    if (previous === undefined) delete process.env.WRANGLER_LOG;
    else process.env.WRANGLER_LOG = previous;
  }
}

/**
 * `env` is what the gateway gets on top of its wrangler.toml vars (the stack's worker env file:
 * secrets, database, upstream); the metrics worker gets the same.
 */
export async function startGatewayInMiniflare(options: {
  stateDir: string;
  env: Record<string, string>;
  /** Opens the V8 inspector (for profiling); off by default. */
  inspectorPort?: number;
  /** The checkout to bundle (another commit's, to compare two in one run); this one by default. */
  root?: string;
  /** A module bundled as the gateway instead of its `main` (the catalog comparison's gateways); its config otherwise. */
  gatewayEntry?: string;
}): Promise<MiniflareGateway> {
  const root = options.root ?? repoRoot;
  const buildDir = join(options.stateDir, 'miniflare-build');
  await Promise.all(
    environments.map((environment) =>
      bundle(root, environment, join(buildDir, environment), environment === 'gateway' ? options.gatewayEntry : undefined),
    ),
  );
  const workers = environments.map((environment, index) => {
    const config = quietly(() => unstable_readConfig({ config: join(root, 'wrangler.toml'), env: environment }));
    const sqliteClasses = new Set(
      config.migrations.flatMap((migration: { new_sqlite_classes?: string[] }) => migration.new_sqlite_classes ?? []),
    );
    return {
      name: config.name,
      modules: true,
      scriptPath: join(buildDir, environment, 'index.js'),
      compatibilityDate: config.compatibility_date,
      compatibilityFlags: config.compatibility_flags,
      ...(index === 0 ? { unsafeDirectSockets: [{ host: '127.0.0.1', port: 0 }] } : {}),
      bindings: { ...(config.vars as Record<string, string>), ...options.env },
      durableObjects: Object.fromEntries(
        config.durable_objects.bindings.map((binding: { name: string; class_name: string; script_name?: string }) => [
          binding.name,
          {
            className: binding.class_name,
            ...(binding.script_name ? { scriptName: binding.script_name } : {}),
            // A class of another worker is SQLite-backed there (every class of this project is).
            useSQLite: binding.script_name ? true : sqliteClasses.has(binding.class_name),
          },
        ]),
      ),
    };
  });
  return runInMiniflare(join(options.stateDir, 'miniflare-state'), workers, options.inspectorPort);
}

type WorkerOptions = V4WorkerOptions & { name: string };

/** `workers` in one Miniflare instance, objects persisted under `persistence`; the first answers on its own socket. */
async function runInMiniflare(persistence: string, workers: WorkerOptions[], inspectorPort?: number): Promise<MiniflareGateway> {
  mkdirSync(persistence, { recursive: true });
  const miniflare = new Miniflare(
    convertV4MiniflareOptions({
      host: '127.0.0.1',
      port: await freePort(),
      cf: false,
      logRequests: false,
      resourcePersistencePath: persistence,
      ...(inspectorPort ? { inspectorPort } : {}),
      workers,
    }),
  );
  const entryUrl = (await miniflare.ready).origin;
  const url = (await miniflare.unsafeGetDirectURL(workers[0]!.name)).origin;
  return { url, entryUrl, stop: () => miniflare.dispose() };
}

/**
 * The runtime's own floors for the same hop, for information: a worker of a few lines in workerd (by
 * Miniflare directly, on its own socket). `/` forwards the request's body to the upstream and answers
 * with the upstream's answer — no auth, no Durable Object, no metering. `/objects` does the same with
 * the two Durable Object calls a leased call makes around it, each writing a record of a call's size
 * to the object's storage (SQLite-backed, persisted to disk as the gateway's are), the answer held
 * until the write is confirmed, as Faucet's `authorize` and `settle` do: the price of keeping a call's
 * reservation and settlement durable next to the user, with nothing else of Faucet's work. `/write`
 * makes only the first of them, before the upstream (Faucet sends its settlement after the answer):
 * the least a call whose reservation is durable before the upstream can add. `?wallet=<name>` picks
 * the object (one per client in the throughput floor, as Faucet's end users each have theirs).
 */
export async function startProxyFloorInMiniflare(upstreamUrl: string, stateDir: string): Promise<MiniflareGateway> {
  return runInMiniflare(join(stateDir, 'proxy-floor-state'), [
    {
      name: 'proxy-floor',
      modules: true,
      compatibilityDate: '2025-09-01',
      bindings: { UPSTREAM_URL: upstreamUrl },
      durableObjects: { CALLS: { className: 'Calls', useSQLite: true } },
      unsafeDirectSockets: [{ host: '127.0.0.1', port: 0 }],
      script: `import { DurableObject } from 'cloudflare:workers';
        export class Calls extends DurableObject {
          async begin(call) {
            this.ctx.storage.put({ ['call:' + call.id]: call, ['claim:' + call.id]: Date.now() });
            return { authorized: true };
          }
          async end(id, booking) {
            this.ctx.storage.put('call:' + id, { id, state: 'settled', booking });
          }
        }
        const fields = (count, prefix) => Object.fromEntries(Array.from({ length: count }, (_, i) => [prefix + i, prefix + '-' + i]));
        export default {
          async fetch(request, env) {
            const url = new URL(request.url);
            const body = await request.text();
            const id = crypto.randomUUID();
            const wallet = url.searchParams.get('wallet') ?? 'one-wallet';
            const calls = url.pathname === '/' ? null : env.CALLS.get(env.CALLS.idFromName(wallet));
            if (calls) await calls.begin({ id, record: fields(21, 'field'), rating: fields(11, 'rating') });
            const answer = await fetch(env.UPSTREAM_URL, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
            const text = await answer.text();
            if (calls && url.pathname === '/objects') await calls.end(id, fields(35, 'booking'));
            return new Response(text, { status: answer.status, headers: { 'content-type': 'application/json' } });
          },
        };`,
    },
  ]);
}
