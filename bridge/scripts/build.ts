import { chmod } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const bridgeRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Bundles the bridge and everything it imports (zod, the shared error table) into one file.
 * `esm` is the npm bin (a `#!/usr/bin/env node` script); `cjs` feeds the single executable,
 * whose embedded entry must be CommonJS on Node 22.
 */
export async function buildBridge(outfile: string, format: 'esm' | 'cjs' = 'esm'): Promise<string> {
  await build({
    entryPoints: [join(bridgeRoot, 'src', 'cli.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format,
    target: 'node20',
    legalComments: 'none',
    logLevel: 'warning',
    banner: format === 'esm' ? { js: '#!/usr/bin/env node' } : {},
  });
  await chmod(outfile, 0o755);
  return outfile;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const outfile = await buildBridge(join(bridgeRoot, 'dist', 'faucet-bridge.mjs'));
  process.stdout.write(`built ${outfile}\n`);
}
