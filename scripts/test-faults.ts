/**
 * `npm run test:faults`: the fault suites (database connection cut mid-booking, upstream failures,
 * Durable Object failures, webhook storm) in the Workers runtime, the short load run, the load run
 * across a minute-long PostgreSQL outage (tests/load/outage.test.ts), and a load run
 * whose database connections are cut at the proxy mid-run; that run ends with the upstream audit
 * (`unbilled upstream calls: 0, unbilled upstream tokens: 0`) beside reconciliation and fails on
 * either.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './lib/stack.ts';

const vitest = join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');
const run = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [vitest, 'run', ...args], { cwd: repoRoot, stdio: 'inherit', env: { ...process.env, ...env } }).status ?? 1;

const workers = run(['--project', 'workers', 'workers/gateway/tests/faults/', 'workers/api/tests/faults/']);
const node = run(['--project', 'node', 'tests/load/']);
// The database connections cut for real at the WebSocket proxy, five times during a load run on a stack of its own.
const load =
  spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      join(repoRoot, 'scripts', 'load.ts'),
      '--users',
      '10',
      '--calls',
      '400',
      '--concurrency',
      '12',
      '--money-actors',
      '2',
      '--seconds',
      '90',
      '--drop-connections',
      '5',
    ],
    { cwd: repoRoot, stdio: 'inherit' },
  ).status ?? 1;
process.exit(workers || node || load);
