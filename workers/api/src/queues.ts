/**
 * The API worker consumes two queues: traces (docs/traces.md) and webhooks (docs/webhooks.md). A
 * batch names its queue (`faucet-webhooks`, `faucet-webhooks-test`, …); each goes to its consumer,
 * which sends through `fetch` (the tests point it at their receivers).
 */
import type { Env } from '#shared/env.ts';
import { deliverTraceBatch } from '#shared/traces/deliver-traces.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';
import { deliverWebhookBatch } from '#shared/webhooks/deliver-webhooks.ts';

export function consumeQueueBatch(batch: MessageBatch<unknown>, env: Env, options: { fetch: FetchFunction }): Promise<void> {
  return batch.queue.startsWith('faucet-webhooks') ? deliverWebhookBatch(batch, env, options) : deliverTraceBatch(batch, env, options);
}
