/**
 * A local stack of its own for `npm run load`: the whole stack of `scripts/lib/stack.ts` (with its
 * fake Stripe API, so top-ups go through the real checkout + webhook path) with the test secrets,
 * generous rate limits and quiet logs. Its state lives under `.faucet/tmp/` and is removed on stop.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startStack, type Stack } from '../../scripts/lib/stack.ts';
import { testSecrets } from '../setup/test-secrets.ts';

export interface ReliabilityStack extends Stack {
  webhookSecret: string;
}

export async function startReliabilityStack(workerVars: Record<string, string> = {}): Promise<ReliabilityStack> {
  const tmp = join(repoRoot, '.faucet', 'tmp');
  mkdirSync(tmp, { recursive: true });
  const stateDir = mkdtempSync(join(tmp, 'reliability-'));
  let stack: Stack;
  try {
    stack = await startStack({
      stateDir,
      secrets: testSecrets,
      workerVars: { API_RATE_LIMIT_MAX_REQUESTS: '1000000', GATEWAY_RATE_LIMIT_MAX_REQUESTS: '1000000', LOG_LEVEL: 'warn', ...workerVars },
    });
  } catch (error) {
    rmSync(stateDir, { recursive: true, force: true });
    throw error;
  }
  return {
    ...stack,
    webhookSecret: testSecrets.STRIPE_WEBHOOK_SECRET,
    async stop() {
      await stack.stop();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
