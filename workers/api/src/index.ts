import type { Env } from '#shared/env.ts';
import { createApiApp } from './app.ts';
import { runMaintenance } from './maintenance.ts';

const app = createApiApp();

export default {
  fetch: app.fetch,
  scheduled(_controller, env, ctx) {
    ctx.waitUntil(runMaintenance(env));
  },
} satisfies ExportedHandler<Env>;
