import type { Context } from 'hono';
import { matchedRoutes } from 'hono/route';

/** The matched route pattern (`/v1/admin/payouts/:id/approve`), never the raw path; `unmatched` for 404s. */
export function routePattern(c: Context): string {
  const endpoint = matchedRoutes(c)
    .filter((route) => route.method !== 'ALL')
    .at(-1);
  return endpoint?.path ?? 'unmatched';
}
