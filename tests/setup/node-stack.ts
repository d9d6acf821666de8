/**
 * Global setup of the Node tests: the whole local stack (embedded PostgreSQL, proxy, three workers
 * under wrangler dev) on free ports with the test secrets, shared by the SDK, e2e and browser tests.
 * Tests read its coordinates with `inject('stack')`.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { type Stack, startStack } from '../../scripts/lib/stack.ts';
import { testSecrets } from './test-secrets.ts';

/** What tests may know of the stack: its plain, serialisable coordinates. */
export type StackCoordinates = Pick<
  Stack,
  'apiUrl' | 'gatewayUrl' | 'metricsUrl' | 'publicAppId' | 'featureKey' | 'adminToken' | 'developerKey' | 'demoExternalUserId' | 'databaseUrl' | 'stripeFakeUrl'
> & { postgresAdminUrl: string; wsProxyPort: number };

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackCoordinates;
  }
}

export default async function setup(project: TestProject) {
  const tmp = join(import.meta.dirname, '..', '..', '.faucet', 'tmp');
  mkdirSync(tmp, { recursive: true });
  const dir = mkdtempSync(join(tmp, 'stack-'));
  const stack = await startStack({
    stateDir: dir,
    secrets: testSecrets,
    // Short sessions let the SDK tests watch a refresh; generous limits keep tests from tripping them.
    sessionTtlSeconds: Number(process.env.FAUCET_TEST_SESSION_TTL ?? 900),
    workerVars: { API_RATE_LIMIT_MAX_REQUESTS: '100000', GATEWAY_RATE_LIMIT_MAX_REQUESTS: '100000', LOG_LEVEL: 'warn' },
  });
  const { seed: _seed, postgres, proxy, stop: _stop, ...coordinates } = stack;
  project.provide('stack', {
    ...coordinates,
    postgresAdminUrl: postgres.url('postgres'),
    wsProxyPort: proxy.port,
  });
  return async () => {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
