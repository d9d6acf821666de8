// Test-only worker (wrangler.toml [env.test]): hosts the Durable Objects so tests can bind them
// locally; its default export is the control API, whose queue consumers send to the tests' receivers.
// Tests call each app through `workers/test/harness.ts`.
import api from '../api/src/index.ts';
import type { Env } from '#shared/env.ts';
import { consumeQueueBatch } from '../api/src/queues.ts';
import { traceReceiver, webhookReceiver } from './trace-receiver.ts';

export { MetricsAggregator, RateLimiter } from '../metrics/src/index.ts';
export { WalletObject } from '../gateway/src/wallet/wallet-object.ts';

export default {
  ...api,
  queue(batch, env) {
    const receiver = batch.queue.startsWith('faucet-webhooks') ? webhookReceiver : traceReceiver;
    return consumeQueueBatch(batch, env, { fetch: (request) => receiver.fetch(request) });
  },
} satisfies ExportedHandler<Env>;
