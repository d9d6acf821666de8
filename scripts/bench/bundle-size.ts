/** Builds every worker with `wrangler deploy --dry-run` (offline) and reports the bundle sizes. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { repoRoot } from '../lib/stack.ts';

export interface BundleSize {
  worker: string;
  bytes: number;
  gzipBytes: number;
}

export function measureWorkerBundles(): BundleSize[] {
  const outRoot = mkdtempSync(join(tmpdir(), 'faucet-bundles-'));
  try {
    return [
      { worker: 'api', args: [] },
      { worker: 'gateway', args: ['--env', 'gateway'] },
      { worker: 'metrics', args: ['--env', 'metrics'] },
    ].map(({ worker, args }) => {
      const outdir = join(outRoot, worker);
      const result = spawnSync(
        process.execPath,
        [join(repoRoot, 'node_modules', 'wrangler', 'bin', 'wrangler.js'), 'deploy', '--dry-run', '--outdir', outdir, ...args],
        { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, WRANGLER_SEND_METRICS: 'false' } },
      );
      if (result.status !== 0) throw new Error(`wrangler dry-run of ${worker} failed:\n${result.stderr}`);
      const code = readFileSync(join(outdir, 'index.js'));
      return { worker, bytes: code.length, gzipBytes: gzipSync(code).length };
    });
  } finally {
    rmSync(outRoot, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  for (const size of measureWorkerBundles()) {
    console.log(`${size.worker.padEnd(8)} ${(size.bytes / 1024).toFixed(1)} KiB (gzip ${(size.gzipBytes / 1024).toFixed(1)} KiB)`);
  }
}
