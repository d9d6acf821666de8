/** `npm run db:reset`: wipes the local database and worker state (stop `npm start` first). */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './lib/stack.ts';

for (const folder of ['postgres', 'wrangler-state', 'wrangler-registry']) {
  rmSync(join(repoRoot, '.faucet', folder), { recursive: true, force: true });
}
console.log('faucet: local data wiped; the next `npm start` migrates and seeds a fresh database.');
