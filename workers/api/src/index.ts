import type { Env } from '#shared/env.ts';
import { createApiApp } from './app.ts';
import { runMaintenance } from './maintenance.ts';
import { consumeQueueBatch } from './queues.ts';

const app = createApiApp();

export default {
  fetch: app.fetch,
  scheduled(_controller, env, ctx) {
    ctx.waitUntil(runMaintenance(env));
  },
  // The traces and webhooks queues (docs/traces.md, docs/webhooks.md): what leaves Faucet for the developer's endpoints.
  queue(batch, env) {
    return consumeQueueBatch(batch, env, { fetch: (request) => fetch(request) });
  },
} satisfies ExportedHandler<Env>;
