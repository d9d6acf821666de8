// Test-only worker (wrangler.toml [env.test]): hosts the Durable Objects so tests can bind them
// locally; its default export is the control API, whose traces consumer sends to the tests' receiver.
// Tests call each app through `workers/test/harness.ts`.
import api from '../api/src/index.ts';
import type { Env } from '#shared/env.ts';
import { deliverTraceBatch } from '#shared/traces/deliver-traces.ts';
import { traceReceiver } from './trace-receiver.ts';

export { MetricsAggregator, RateLimiter } from '../metrics/src/index.ts';
export { WalletObject } from '../gateway/src/wallet/wallet-object.ts';

export default {
  ...api,
  queue(batch, env) {
    return deliverTraceBatch(batch, env, { fetch: (request) => traceReceiver.fetch(request) });
  },
} satisfies ExportedHandler<Env>;
