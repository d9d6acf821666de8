/**
 * Global setup of the Node tests: the whole local stack (embedded PostgreSQL, proxy, three workers
 * and the console under wrangler dev) on free ports with the test secrets, shared by the SDK, e2e and browser tests.
 * Tests read its coordinates with `inject('stack')`.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { type Stack, startStack } from '../../scripts/lib/stack.ts';
import { startFakeOpenAiUpstream } from '../adversarial/fake-openai-upstream.ts';
import { testSecrets } from './test-secrets.ts';

/** What tests may know of the stack: its plain, serialisable coordinates. */
export type StackCoordinates = Pick<
  Stack,
  | 'apiUrl'
  | 'gatewayUrl'
  | 'metricsUrl'
  | 'consoleUrl'
  | 'publicAppId'
  | 'featureKey'
  | 'adminToken'
  | 'developerKey'
  | 'demoExternalUserId'
  | 'databaseUrl'
  | 'stripeFakeUrl'
> & {
  postgresAdminUrl: string;
  wsProxyPort: number;
  /** The fake upstream behind the `openai` and `anthropic` platform pools: its log of answered calls (`GET /__calls`). */
  fakeUpstreamCallsUrl: string;
};

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackCoordinates;
  }
}

export default async function setup(project: TestProject) {
  const tmp = join(import.meta.dirname, '..', '..', '.faucet', 'tmp');
  mkdirSync(tmp, { recursive: true });
  const dir = mkdtempSync(join(tmp, 'stack-'));
  // The `openai` and `anthropic` platform pools call one fake upstream on loopback (the adversarial and e2e tests read its log).
  const fakeUpstream = await startFakeOpenAiUpstream();
  const stack = await startStack({
    stateDir: dir,
    secrets: testSecrets,
    // The console's browser tests (workers/console/test) drive it against this stack.
    console: true,
    // Short sessions let the SDK tests watch a refresh; generous limits keep tests from tripping them.
    sessionTtlSeconds: Number(process.env.FAUCET_TEST_SESSION_TTL ?? 900),
    workerVars: {
      API_RATE_LIMIT_MAX_REQUESTS: '100000',
      GATEWAY_RATE_LIMIT_MAX_REQUESTS: '100000',
      LOG_LEVEL: 'warn',
      OPENAI_API_KEY: 'sk-fake-upstream-not-a-real-key',
      OPENAI_BASE_URL: fakeUpstream.baseUrl,
      ANTHROPIC_API_KEY: 'sk-ant-fake-upstream-not-a-real-key',
      ANTHROPIC_BASE_URL: fakeUpstream.anthropicBaseUrl,
      UPSTREAM_ALLOW_LOOPBACK: fakeUpstream.hostPort,
      UPSTREAM_DRAIN_MS: '2000',
    },
  });
  const { seed: _seed, postgres, proxy, stop: _stop, ...coordinates } = stack;
  project.provide('stack', {
    ...coordinates,
    postgresAdminUrl: postgres.url('postgres'),
    wsProxyPort: proxy.port,
    fakeUpstreamCallsUrl: `http://${fakeUpstream.hostPort}/__calls`,
  });
  return async () => {
    await stack.stop();
    await fakeUpstream.close();
    rmSync(dir, { recursive: true, force: true });
  };
}
