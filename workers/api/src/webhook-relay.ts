/**
 * Wakes the webhooks relay (docs/webhooks.md) after an API request that may have written events: an
 * operator's payout, clawback or wallet adjustment, a developer's payout request or cancellation, a
 * Stripe refund or dispute. The triggers wrote the events with the change; this only shortens their
 * wait (the cron relays whatever is left), after the answer, under waitUntil.
 */
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '#shared/app-env.ts';
import { createHttpDatabase } from '#shared/db.ts';
import type { Env } from '#shared/env.ts';
import { type RelayTarget, relayWebhookEvents } from '#shared/webhooks/relay.ts';

const moneyPaths = ['/v1/admin/', '/v1/developer/payouts', '/v1/webhooks/stripe'];

export function relayAfterMoneyChanges(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    if (c.req.method === 'GET' || c.req.method === 'HEAD' || c.res.status >= 400) return;
    if (!moneyPaths.some((prefix) => c.req.path.startsWith(prefix))) return;
    c.executionCtx.waitUntil(relayNow(c.env).catch(() => undefined));
  };
}

export async function relayNow(env: Env): Promise<number> {
  return relayWebhookEvents(createHttpDatabase(env), relayTarget(env));
}

/** The webhooks queue; in tests also the per-file database its consumer must read (elsewhere the worker's own). */
export function relayTarget(env: Env): RelayTarget {
  return {
    queue: env.WEBHOOKS,
    databaseUrl: env.ENVIRONMENT === 'test' && typeof env.DATABASE_URL === 'string' ? env.DATABASE_URL : null,
  };
}
