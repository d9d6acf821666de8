import type { Env } from '#shared/env.ts';
import { createApiApp } from './app.ts';
import { runMaintenance } from './maintenance.ts';
import { deliverTraceBatch } from '#shared/traces/deliver-traces.ts';

const app = createApiApp();

export default {
  fetch: app.fetch,
  scheduled(_controller, env, ctx) {
    ctx.waitUntil(runMaintenance(env));
  },
  // The traces queue (docs/traces.md): spans of the gateway's calls, sent to each app's endpoint.
  queue(batch, env) {
    return deliverTraceBatch(batch, env, { fetch: (request) => fetch(request) });
  },
} satisfies ExportedHandler<Env>;
