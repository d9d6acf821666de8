/** `npm run typecheck`: strict TypeScript over the whole repo. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './lib/stack.ts';

const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
process.exit(spawnSync(process.execPath, [tsc, '--noEmit', '-p', repoRoot], { stdio: 'inherit' }).status ?? 1);
