/** `npm run lint`: format and fix what Biome can (`--write`), then report what is left and what knip finds. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './lib/stack.ts';

const biome = join(repoRoot, 'node_modules', '@biomejs', 'biome', 'bin', 'biome');
const knip = join(repoRoot, 'node_modules', 'knip', 'bin', 'knip.js');
const fix = spawnSync(process.execPath, [biome, 'check', '--write', '.'], { cwd: repoRoot, stdio: 'inherit' });
const unused = spawnSync(process.execPath, [knip, '--no-progress'], { cwd: repoRoot, stdio: 'inherit' });
process.exit(fix.status || unused.status || 0);
