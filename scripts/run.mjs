// Entry point of every npm script. Plain JavaScript so that it runs on whatever Node started npm
// (this machine ships Node 20): it installs dependencies on a fresh clone, then runs the given
// TypeScript file under Node 22 — the machine's own when new enough, otherwise the binary that the
// `node` devDependency brings from the npm registry.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bundledNode = join(root, 'node_modules', 'node', 'bin', 'node');
const tsxLoader = join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs');
const machineNodeIsNewEnough = Number(process.versions.node.split('.')[0]) >= 22;

if (
  !existsSync(tsxLoader) ||
  !existsSync(join(root, 'node_modules', 'wrangler')) ||
  (!machineNodeIsNewEnough && !existsSync(bundledNode))
) {
  console.log('faucet: installing dependencies (first run)…');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  // `npm ci` installs exactly the committed lock and never rewrites it, so a fresh clone stays clean;
  // `npm install` only where there is no lock yet.
  const command = existsSync(join(root, 'package-lock.json')) ? 'ci' : 'install';
  const install = spawnSync(npm, [command, '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (install.status !== 0) {
    console.error(`faucet: npm ${command} failed`);
    process.exit(install.status ?? 1);
  }
}

const nodeBinary = machineNodeIsNewEnough ? process.execPath : bundledNode;
const [entry, ...args] = process.argv.slice(2);
if (!entry) {
  console.error('usage: node scripts/run.mjs <script.ts> [args…]');
  process.exit(2);
}

const child = spawn(nodeBinary, ['--import', 'tsx', join(root, entry), ...args], {
  cwd: root,
  stdio: 'inherit',
  env: {
    ...process.env,
    // Child tools (wrangler, vitest, workerd launchers) resolve `node` from PATH: make it Node 22.
    PATH: [join(root, 'node_modules', '.bin'), dirname(nodeBinary), process.env.PATH].join(':'),
  },
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
