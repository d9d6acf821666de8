/**
 * `npm test`: the typecheck, Biome (format + lint), knip, then every suite (Workers runtime, Node, browser). Installs Debian's Chromium first when the
 * browser tests need it and this machine can (root with apt-get), since no browser is downloaded
 * any other way here.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './lib/stack.ts';

const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
if (!existsSync(chromium) && process.getuid?.() === 0 && existsSync('/usr/bin/apt-get')) {
  console.log('faucet: installing Chromium from Debian for the browser tests…');
  const quiet = { stdio: 'inherit' as const, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } };
  spawnSync('apt-get', ['update', '-qq'], quiet);
  spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], quiet);
}

// Strict TypeScript first (~10 s): a type error fails the run like a failing test.
const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
const typecheck = spawnSync(process.execPath, [tsc, '--noEmit', '-p', repoRoot], { cwd: repoRoot, stdio: 'inherit' });
if (typecheck.status !== 0) {
  console.error('faucet: typecheck failed');
  process.exit(typecheck.status ?? 1);
}

// Format + lint (Biome) and unused files, exports and dependencies (knip): a finding fails the run.
for (const [name, bin, args] of [
  ['biome', join(repoRoot, 'node_modules', '@biomejs', 'biome', 'bin', 'biome'), ['ci', '.']],
  ['knip', join(repoRoot, 'node_modules', 'knip', 'bin', 'knip.js'), ['--no-progress']],
] as const) {
  const check = spawnSync(process.execPath, [bin, ...args], { cwd: repoRoot, stdio: 'inherit' });
  if (check.status !== 0) {
    console.error(`faucet: ${name} failed`);
    process.exit(check.status ?? 1);
  }
}

const vitest = join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');
const result = spawnSync(process.execPath, [vitest, 'run', ...process.argv.slice(2)], { cwd: repoRoot, stdio: 'inherit' });
process.exit(result.status ?? 1);
