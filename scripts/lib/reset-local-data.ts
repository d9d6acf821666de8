import { rmSync } from 'node:fs';
import { join } from 'node:path';

/** What `npm run db:reset` removes from a stack's state folder: the database and the workers' state. */
export const resettableFolders = ['postgres', 'wrangler-state', 'wrangler-registry'] as const;

export function resetLocalData(stateDir: string): void {
  for (const folder of resettableFolders) rmSync(join(stateDir, folder), { recursive: true, force: true });
}
