import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBridge } from '../scripts/build';
import { rawRequest } from './support/http-request';
import { freePort } from './support/listen';
import { version } from '../package.json';

let directory: string;
let binary: string;
let stateDirectory: string;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'faucet-bridge-bin-'));
  binary = await buildBridge(join(directory, 'faucet-bridge.mjs'));
  stateDirectory = join(directory, 'state');
});
afterAll(() => rm(directory, { recursive: true, force: true }));

interface Child {
  stdout: string;
  stderr: string;
  /** Resolves with the first stdout text matching, or rejects when the process exits first. */
  waitFor(pattern: RegExp): Promise<void>;
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): void;
}

/** Runs the bundle through its `#!/usr/bin/env node` line, as `faucet-bridge` would be run. */
function run(args: string[]): Child {
  const child = spawn(binary, args, {
    env: { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH}`, XDG_STATE_HOME: stateDirectory },
  });
  const state = { stdout: '', stderr: '' };
  const waiters: Array<() => void> = [];
  child.stdout.on('data', (chunk: Buffer) => {
    state.stdout += chunk.toString();
    for (const check of waiters) check();
  });
  child.stderr.on('data', (chunk: Buffer) => (state.stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    get stdout() {
      return state.stdout;
    },
    get stderr() {
      return state.stderr;
    },
    exited,
    kill: (signal) => child.kill(signal),
    waitFor: (pattern) =>
      new Promise<void>((resolve, reject) => {
        const check = () => pattern.test(state.stdout) && resolve();
        waiters.push(check);
        check();
        void exited.then((code) => reject(new Error(`exited with ${code} before ${pattern}: ${state.stderr}`)));
      }),
  };
}

describe('the built faucet-bridge binary', () => {
  it('prints its version and help', async () => {
    const versionRun = run(['--version']);
    expect(await versionRun.exited).toBe(0);
    expect(versionRun.stdout.trim()).toBe(version);
    const helpRun = run(['--help']);
    expect(await helpRun.exited).toBe(0);
    expect(helpRun.stdout).toContain('faucet-bridge start');
  });

  it('`start --port N` answers /health on 127.0.0.1 and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const bridge = run(['start', '--port', String(port)]);
    await bridge.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+/);
    const health = await rawRequest(port, { path: '/health' });
    expect(health.status).toBe(200);
    expect(health.json()).toEqual({ status: 'ok', version });
    bridge.kill('SIGTERM');
    expect(await bridge.exited).toBe(0);
    expect(bridge.stderr).toContain('"msg":"stopped"');
  });

  it('stops cleanly on SIGINT too', async () => {
    const bridge = run(['start', '--port', String(await freePort())]);
    await bridge.waitFor(/listening on/);
    bridge.kill('SIGINT');
    expect(await bridge.exited).toBe(0);
  });

  it('refuses to bind a non-loopback address without --allow-non-loopback', async () => {
    const port = await freePort();
    const bridge = run(['start', '--port', String(port), '--host', '0.0.0.0']);
    expect(await bridge.exited).toBe(2);
    expect(bridge.stderr).toContain('--allow-non-loopback');
    expect(bridge.stdout).not.toContain('listening');
    await expect(rawRequest(port, { path: '/health' })).rejects.toThrow(/ECONNREFUSED/);
  });

  it('binds a non-loopback address with the flag, and warns', async () => {
    const port = await freePort();
    const bridge = run(['start', '--port', String(port), '--host', '0.0.0.0', '--allow-non-loopback']);
    await bridge.waitFor(/listening on http:\/\/0\.0\.0\.0:/);
    expect(bridge.stderr).toContain('"level":"warn"');
    expect(bridge.stderr).toContain('non-loopback');
    expect((await rawRequest(port, { path: '/health' })).status).toBe(200);
    bridge.kill('SIGTERM');
    expect(await bridge.exited).toBe(0);
  });

  it('exits with usage help on a bad flag', async () => {
    const bridge = run(['start', '--port', 'eighty']);
    expect(await bridge.exited).toBe(2);
    expect(bridge.stderr).toContain('--help');
  });
});
