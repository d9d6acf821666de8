/**
 * `npm run test:abuse`: the abuse suites with many more fuzz runs than `npm test` uses — the route
 * fuzzer and auth matrix and secret scan in the Workers runtime, the bridge and raw-HTTP fuzzers
 * against the local stack. `FAUCET_FUZZ_RUNS` (default 2000) sets the number of runs per fuzzer.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './lib/stack.ts';

const runs = process.env.FAUCET_FUZZ_RUNS ?? '2000';
const vitest = join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');
const run = (args: string[]) =>
  spawnSync(process.execPath, [vitest, 'run', ...args], {
    cwd: repoRoot,
    stdio: 'inherit',
    // The Workers-runtime tests only see VITE_-prefixed variables (through import.meta.env).
    env: { ...process.env, FAUCET_FUZZ_RUNS: runs, VITE_FAUCET_FUZZ_RUNS: runs },
  }).status ?? 1;

// Without the module cache: a cached transform would keep the number of runs it was first built with.
const workers = run(['--project', 'workers', '--experimental.fsModuleCache=false', 'workers/api/tests/abuse/']);
const node = run(['--project', 'node', 'tests/abuse/']);
process.exit(workers || node);
