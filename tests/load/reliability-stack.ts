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

export async function startReliabilityStack(
  workerVars: Record<string, string> = {},
  options: { verbose?: boolean } = {},
): Promise<ReliabilityStack> {
  const tmp = join(repoRoot, '.faucet', 'tmp');
  mkdirSync(tmp, { recursive: true });
  // Free ports are picked before wrangler binds them, so on a busy machine another process can take
  // one in between; a start that fails is retried on fresh ports.
  for (let attempt = 1; ; attempt++) {
    const stateDir = mkdtempSync(join(tmp, 'reliability-'));
    try {
      const stack = await startStack({
        stateDir,
        secrets: testSecrets,
        verbose: options.verbose ?? false,
        workerVars: {
          API_RATE_LIMIT_MAX_REQUESTS: '1000000',
          GATEWAY_RATE_LIMIT_MAX_REQUESTS: '1000000',
          LOG_LEVEL: 'warn',
          ...workerVars,
        },
      });
      return {
        ...stack,
        webhookSecret: testSecrets.STRIPE_WEBHOOK_SECRET,
        async stop() {
          await stack.stop();
          rmSync(stateDir, { recursive: true, force: true });
        },
      };
    } catch (error) {
      rmSync(stateDir, { recursive: true, force: true });
      if (attempt >= 3) throw error;
      console.error(`faucet: the stack did not start (attempt ${attempt}): ${(error as Error).message.split('\n')[0]}; retrying`);
    }
  }
}
