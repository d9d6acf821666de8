/** `npm run db:reset`: wipes the local database and worker state (stop `npm start` first). */
import { join } from 'node:path';
import { resetLocalData } from './lib/reset-local-data.ts';
import { repoRoot } from './lib/stack.ts';

resetLocalData(join(repoRoot, '.faucet'));
console.log('faucet: local data wiped; the next `npm start` migrates and seeds a fresh database.');
