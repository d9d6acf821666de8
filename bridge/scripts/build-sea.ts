import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildBridge } from './build.ts';

/**
 * A standalone `faucet-bridge` executable through Node's single executable applications:
 * bundle to CommonJS, turn it into a SEA blob, copy the running node binary and inject the
 * blob with postject (fetched from the npm registry by `npm exec`, pinned). Builds for the
 * platform it runs on.
 */
const bridgeRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const postject = 'postject@1.0.0-alpha.6';
const fuse = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

export async function buildSea(outputDirectory = join(bridgeRoot, 'dist', 'sea')): Promise<string> {
  await mkdir(outputDirectory, { recursive: true });
  const main = await buildBridge(join(outputDirectory, 'faucet-bridge.cjs'), 'cjs');
  const blob = join(outputDirectory, 'faucet-bridge.blob');
  const config = join(outputDirectory, 'sea-config.json');
  await writeFile(config, JSON.stringify({ main, output: blob, disableExperimentalSEAWarning: true, useCodeCache: false }));
  execFileSync(process.execPath, ['--experimental-sea-config', config], { stdio: 'inherit' });

  const executable = join(outputDirectory, process.platform === 'win32' ? 'faucet-bridge.exe' : 'faucet-bridge');
  await copyFile(process.execPath, executable);
  if (process.platform === 'darwin') execFileSync('codesign', ['--remove-signature', executable], { stdio: 'inherit' });
  const injectArgs = [executable, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', fuse, '--overwrite'];
  if (process.platform === 'darwin') injectArgs.push('--macho-segment-name', 'NODE_SEA');
  execFileSync('npm', ['exec', '--yes', `--package=${postject}`, '--', 'postject', ...injectArgs], {
    stdio: 'inherit',
    shell: process.platform === 'win32',
  });
  if (process.platform === 'darwin') execFileSync('codesign', ['--sign', '-', executable], { stdio: 'inherit' });
  return executable;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(`built ${await buildSea()}\n`);
}
