/**
 * Builds the console (workers/console) with Vite and @cloudflare/vite-plugin into `outDir`: the
 * single-page app under `client/`, the Worker and its generated wrangler.json under
 * `faucet_console/`. Returns that wrangler.json's path, which `wrangler dev` (the local stack) and
 * `wrangler deploy` take. Each stack builds into its own state folder, so parallel stacks never race.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
const repoRoot = join(import.meta.dirname, '..', '..');
const consoleViteConfig = join(repoRoot, 'workers', 'console', 'vite.config.ts');

export function buildConsole(outDir: string): Promise<string> {
  const vite = join(repoRoot, 'node_modules', 'vite', 'bin', 'vite.js');
  const child = spawn(process.execPath, [vite, 'build', '-c', consoleViteConfig, '--outDir', outDir, '--logLevel', 'warn'], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code === 0) resolve(join(outDir, 'faucet_console', 'wrangler.json'));
      else reject(new Error(`console build failed (exit ${code}):\n${output.join('')}`));
    });
  });
}
