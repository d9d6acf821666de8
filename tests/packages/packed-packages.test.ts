/**
 * What users run is the package, not the repo: `npm pack` both workspaces (their
 * `prepare` builds sdk/dist and bridge/dist), install the tarballs into a fresh project in the
 * system's temporary folder — outside the repo, so nothing resolves to its sources — and use them
 * there against the running local stack: the core from plain Node and from a Worker (workerd), the
 * React components built by Vite and driven in Chromium, the AI SDK provider with generateText and
 * streamText, and `faucet-bridge` started from the tarball's bin. The third-party packages the
 * project needs (react, vite, ai, …) are linked from the repo's node_modules to stay fast and
 * offline; npm itself installs only the two tarballs, which must need nothing else.
 */
import { execFile, spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, extname, join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { convertV4MiniflareOptions, Miniflare } from 'miniflare';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../bridge/test/support/listen.ts';
import { checkApiReport, readApiReport, readBuiltDeclarations } from '../../sdk/scripts/api-report.ts';
import { launchChromium } from '../../sdk/test/chromium.ts';

const stack = inject('stack');
const run = promisify(execFile);
const repoRoot = join(import.meta.dirname, '..', '..');
const fixture = join(import.meta.dirname, 'fixture');
/** Node 22 (this test's own), first on PATH for npm's lifecycle scripts and the `#!/usr/bin/env node` bin. */
const childEnv = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH}` };
/** Linked from the repo's node_modules into the fresh project: what an app installs next to the SDK. */
const appDependencies = ['react', 'react-dom', 'vite', '@vitejs/plugin-react', 'ai', '@ai-sdk/openai-compatible'];

let project: string;
let token: string;

async function json<T>(response: Response): Promise<T> {
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** A user of the demo app with a funded wallet: the app's backend mints its session with the developer key. */
async function fundedSession(): Promise<string> {
  const session = await json<{ session_token: string }>(
    await fetch(`${stack.apiUrl}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.developerKey}` },
      body: JSON.stringify({ public_app_id: stack.publicAppId, external_user_id: `pack-${crypto.randomUUID()}` }),
    }),
  );
  const wallet = await json<{ wallet_id: string }>(
    await fetch(`${stack.apiUrl}/v1/user/wallet`, { headers: { authorization: `Bearer ${session.session_token}` } }),
  );
  await json(
    await fetch(`${stack.apiUrl}/v1/admin/wallets/${wallet.wallet_id}/credit-test-balance`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.adminToken}` },
      body: JSON.stringify({ amount_usd: '1.00000000' }),
    }),
  );
  return session.session_token;
}

/** The coordinates the fixture scripts read, the session token among them (environment, never argv). */
function stackEnv(): Record<string, string> {
  return {
    FAUCET_API_URL: stack.apiUrl,
    FAUCET_GATEWAY_URL: stack.gatewayUrl,
    FAUCET_PUBLIC_APP_ID: stack.publicAppId,
    FAUCET_FEATURE: stack.featureKey,
    FAUCET_SESSION_TOKEN: token,
  };
}

async function runScript(name: string): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [join(project, name)], { cwd: project, env: { ...childEnv, ...stackEnv() } });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
}

beforeAll(async () => {
  const [session] = await Promise.all([
    fundedSession(),
    (async () => {
      project = await mkdtemp(join(tmpdir(), 'faucet-packed-'));
      // `prepare` builds each package while it is packed.
      await run('npm', ['pack', '--workspace', 'sdk', '--workspace', 'bridge', '--pack-destination', project], {
        cwd: repoRoot,
        env: childEnv,
        maxBuffer: 16 * 1024 * 1024,
      });
      const tarballs = (await readdir(project)).filter((file) => file.endsWith('.tgz')).map((file) => `./${file}`);
      expect(tarballs).toHaveLength(2);
      await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'fresh-app', private: true, type: 'module' }));
      await run('npm', ['install', '--no-audit', '--no-fund', '--offline', ...tarballs], { cwd: project, env: childEnv });
      for (const name of appDependencies) {
        await mkdir(dirname(join(project, 'node_modules', name)), { recursive: true });
        await symlink(join(repoRoot, 'node_modules', name), join(project, 'node_modules', name), 'dir');
      }
      for (const file of ['node-check.mjs', 'ai-check.mjs', 'worker.mjs', 'app']) {
        await cp(join(fixture, file), join(project, file), { recursive: true });
      }
    })(),
  ]);
  token = session;
}, 120_000);

afterAll(() => (project ? rm(project, { recursive: true, force: true }) : undefined));

describe('the packed tarballs', () => {
  it('hold the builds and their types, not the sources', async () => {
    const sdk = join(project, 'node_modules', '@faucet', 'sdk');
    const files = await readdir(join(sdk, 'dist'));
    expect(files).toEqual(expect.arrayContaining(['index.js', 'index.d.ts', 'react.js', 'react.d.ts', 'ai.js', 'ai.d.ts']));
    expect(files.some((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toBe(false);
    expect((await readdir(sdk)).sort()).toEqual(['CHANGELOG.md', 'dist', 'package.json']);
    expect((await readdir(join(project, 'node_modules', 'faucet-bridge'))).sort()).toEqual(['CHANGELOG.md', 'dist', 'package.json']);
  });

  it('carry the SDK types of the committed API report, under the versioning rule (sdk/CHANGELOG.md)', async () => {
    const sdk = join(project, 'node_modules', '@faucet', 'sdk');
    const { version } = JSON.parse(await readFile(join(sdk, 'package.json'), 'utf8')) as { version: string };
    const problems = checkApiReport({
      packageVersion: version,
      built: await readBuiltDeclarations(join(sdk, 'dist')),
      snapshots: await readApiReport(),
      changelog: await readFile(join(sdk, 'CHANGELOG.md'), 'utf8'),
    });
    expect(problems).toEqual([]);
  });
});

describe('@faucet/sdk from the tarball', () => {
  it('chats through the local stack from plain Node, and refusals are FaucetErrors', async () => {
    const result = await runScript('node-check.mjs');
    expect(result.text).toBe('Echo: Hello from the tarball');
    expect(result.faucet).toMatchObject({ route_mode: 'platform', provider: 'mock', model: 'echo' });
    expect(result.refusedIsFaucetError).toBe(true);
    expect(result.refusedStatus).toBe(400);
  });

  it('chats through the local stack from a Worker (workerd)', async () => {
    const bundle = await build({
      entryPoints: [join(project, 'worker.mjs')],
      absWorkingDir: project,
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'neutral',
      conditions: ['workerd', 'worker'],
      logLevel: 'silent',
    });
    const worker = new Miniflare(
      convertV4MiniflareOptions({
        modules: true,
        script: bundle.outputFiles[0]!.text,
        compatibilityDate: '2025-09-01',
        bindings: stackEnv(),
      }),
    );
    try {
      const response = await worker.dispatchFetch('http://worker.test/');
      const body = (await response.json()) as { text: string; requestId: string };
      expect(body.text).toBe('Echo: Hello from a Worker');
      expect(body.requestId).toMatch(/\S/);
    } finally {
      await worker.dispose();
    }
  });
});

describe('@faucet/sdk/ai from the tarball', () => {
  it('runs generateText and streamText, obtaining the session itself and exposing the faucet metadata', async () => {
    const result = await runScript('ai-check.mjs');
    expect(result.generatedText).toBe('Echo: Generated from the tarball');
    expect(result.streamedText).toBe('Echo: Streamed from the tarball');
    for (const faucet of [result.generatedFaucet, result.streamedFaucet]) {
      expect(faucet).toMatchObject({ route_mode: 'platform', provider: 'mock', model: 'echo', charge: { currency: 'USD' } });
      expect((faucet as { request_id: string }).request_id).toMatch(/\S/);
      expect((faucet as { charge: { amount_usd: string } }).charge.amount_usd).toMatch(/^\d+\.\d{8}$/);
    }
    expect(result.generatedFaucet).not.toEqual(result.streamedFaucet);
    // One session for both calls: obtained once, then cached.
    expect(result.sessionsObtained).toBe(1);
  });
});

const contentTypes: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

/** Serves the built app, proxies /api and /gateway to the stack, and plays the app's backend at /session. */
async function serveApp(dist: string): Promise<Server> {
  const server = createServer(async (request, response) => {
    const path = request.url ?? '/';
    const target = path.startsWith('/api/')
      ? stack.apiUrl + path.slice(4)
      : path.startsWith('/gateway/')
        ? stack.gatewayUrl + path.slice(8)
        : undefined;
    if (path === '/session') return void response.writeHead(200, { 'content-type': 'text/plain' }).end(token);
    if (target) {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const headers = Object.fromEntries(
        Object.entries(request.headers).filter(([name]) => ['authorization', 'content-type', 'x-request-id', 'accept'].includes(name)),
      ) as Record<string, string>;
      const upstream = await fetch(target, { method: request.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
      response.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      if (!upstream.body) return void response.end();
      return void Readable.fromWeb(upstream.body as import('node:stream/web').ReadableStream).pipe(response);
    }
    const file = path.split('?')[0] === '/' ? 'index.html' : path.split('?')[0]!.slice(1);
    try {
      const body = await readFile(join(dist, file));
      response.writeHead(200, { 'content-type': contentTypes[extname(file)] ?? 'application/octet-stream' }).end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

describe('@faucet/sdk/react from the tarball in a Vite + React app', () => {
  let browser: Browser | undefined;
  let server: Server | undefined;
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  });

  it('builds with Vite, loads in Chromium and answers a chat from the stack', async () => {
    const app = join(project, 'app');
    await run(process.execPath, [join(project, 'node_modules', 'vite', 'bin', 'vite.js'), 'build'], { cwd: app, env: childEnv });
    server = await serveApp(join(app, 'dist'));
    browser = await launchChromium();
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    const { port } = server.address() as AddressInfo;
    await page.goto(`http://127.0.0.1:${port}/?app=${stack.publicAppId}&feature=${stack.featureKey}`);
    const chat = page.getByRole('region', { name: 'Chat' });
    await chat.getByLabel('Message', { exact: true }).fill('Hello from Vite');
    await chat.getByRole('button', { name: 'Send' }).click();
    const answer = chat.locator('.faucet-chat__message--assistant[data-status="done"]');
    await answer.waitFor();
    expect(await answer.textContent()).toContain('Echo: Hello from Vite');
    expect(pageErrors).toEqual([]);
  });
});

describe('faucet-bridge from the tarball', () => {
  const bin = () => join(project, 'node_modules', '.bin', 'faucet-bridge');

  it('prints --version and --help without a model server', async () => {
    const version = await run(bin(), ['--version'], { env: childEnv });
    const { version: expected } = JSON.parse(await readFile(join(repoRoot, 'bridge', 'package.json'), 'utf8')) as { version: string };
    expect(version.stdout.trim()).toBe(expected);
    expect((await run(bin(), ['--help'], { env: childEnv })).stdout).toContain('faucet-bridge start');
  });

  it('starts and answers /health', async () => {
    // No model server behind it: the bridge still starts and reports itself healthy.
    const child = spawn(bin(), ['start', '--port', String(await freePort()), '--upstream', 'http://127.0.0.1:9'], {
      env: { ...childEnv, XDG_STATE_HOME: join(project, 'state') },
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let stdout = '';
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          const match = /listening on (\S+)/.exec(stdout);
          if (match) resolve(match[1]!);
        });
        child.once('exit', (code) => reject(new Error(`faucet-bridge exited with ${code}`)));
      });
      const health = await fetch(`${url}/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    } finally {
      child.kill('SIGTERM');
    }
  });
});
