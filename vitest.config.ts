import { availableParallelism } from 'node:os';
import { cloudflareTest } from '@cloudflare/vitest-plugin';
import { defaultClientConditions, defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';
import { testSecrets } from './tests/setup/test-secrets.ts';

/**
 * Three kinds of tests (see README):
 * - `workers`: every `*.test.ts` under workers/ (but `*.node.test.ts`), inside the Workers runtime,
 *   against a real embedded PostgreSQL behind the WebSocket proxy; each file clones its own database, and
 *   the files share one runtime (`isolate: false`).
 * - `node`: the SDK, the bridge, scripts, pure logic (`*.node.test.ts`) and end-to-end tests against the
 *   whole local stack started once by the global setup; `*.browser.test.ts` drive headless Chromium
 *   (the console's, under workers/console/test, too).
 */
export default defineConfig({
  test: {
    // Two files at a time even on two CPUs (Vitest's default there is one): the suites mostly wait on
    // PostgreSQL, a browser or a timer, so a second file fills that time (the Workers files then share
    // two runtimes). About a quarter off the suite's length on a two-CPU machine (README, Tests).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: './wrangler.toml', environment: 'test' },
            miniflare: {
              bindings: {
                // Explicit, so that a developer's own .dev.vars never leaks into the tests.
                ...Object.fromEntries(Object.entries(testSecrets).filter(([key]) => key !== 'DEMO_DEVELOPER_KEY')),
                DATABASE_WS_PROXY: inject('wsProxyAddress'),
                TEST_DATABASE_ADMIN_URL: inject('databaseAdminUrl'),
                TEST_DATABASE_URL_PREFIX: inject('databaseUrlPrefix'),
                STRIPE_API_HOST: '127.0.0.1',
                STRIPE_API_PORT: String(inject('stripeApiPort')),
                STRIPE_API_PROTOCOL: 'http',
              },
            },
          })),
        ],
        test: {
          name: 'workers',
          include: ['workers/**/*.test.ts'],
          exclude: ['**/*.node.test.ts', '**/*.browser.test.ts', '**/node_modules/**'],
          globalSetup: ['tests/setup/workers-database.ts', 'tests/setup/stripe-fake.ts'],
          // One Workers runtime for all the files (not one per file): far faster. Files still do not share
          // data (each clones its database), so any module-level state that leaks between them is a bug.
          isolate: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        // In the repo, `@faucet/sdk` resolves to its TypeScript sources (the package's `faucet-source`
        // export condition), not to the build that users install (sdk/dist).
        resolve: { conditions: ['faucet-source', ...defaultClientConditions] },
        ssr: { resolve: { conditions: ['faucet-source', ...defaultServerConditions] } },
        test: {
          name: 'node',
          environment: 'node',
          include: [
            'sdk/**/*.test.{ts,tsx}',
            'bridge/**/*.test.ts',
            'scripts/**/*.test.ts',
            'tests/**/*.test.ts',
            'drizzle/**/*.test.ts',
            'workers/**/*.node.test.ts',
            'workers/**/*.browser.test.ts',
          ],
          exclude: ['**/node_modules/**', '**/dist/**'],
          globalSetup: ['tests/setup/node-stack.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
