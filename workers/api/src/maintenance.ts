/**
 * Housekeeping on a cron trigger (wrangler.toml `[triggers]`): books gateway calls the gateway could
 * not settle (sweep-stale-calls.ts), marks expired holds, folds the hot
 * accounts' appended credits into their balance rows and new usage events into the usage rollup, and
 * deletes request-log rows past their app's retention (docs/request-log.md); relays webhook events
 * the API and the gateway did not relay at once, queues again deliveries whose message was lost, and
 * deletes webhook records older than 30 days (docs/webhooks.md).
 * Balances and usage reads are exact without it; it keeps the holds, deltas and pending lists short.
 */
import { deleteExpiredCallLog } from '#shared/calls/list-calls.ts';
import { sweepStaleCalls } from '#shared/calls/sweep-stale-calls.ts';
import { createDatabase } from '#shared/db.ts';
import type { Env } from '#shared/env.ts';
import { expireHolds } from '#shared/ledger/holds.ts';
import { rollUpBalances } from '#shared/ledger/roll-up.ts';
import { createLogger } from '#shared/logger.ts';
import { rollUpUsage } from '#shared/usage/roll-up-usage.ts';
import { deleteOldWebhookRecords } from '#shared/webhooks/deliveries.ts';
import { requeueLostDeliveries } from '#shared/webhooks/relay.ts';
import { relayNow, relayTarget } from './webhook-relay.ts';

export interface MaintenanceResult {
  /** Gateway calls past their deadline and grace that the gateway never settled: booked at their bound. */
  sweptCalls: number;
  expiredHolds: number;
  rolledUpWallets: number;
  /** Usage events folded into the usage rollup (docs/developers.md, "Usage"). */
  rolledUpUsageEvents: number;
  /** Request-log rows older than their app's retention, deleted (usage records and the ledger never are). */
  deletedCallLogRows: number;
  /** Webhook deliveries queued for events the relay had not yet seen, and again for deliveries whose message was lost. */
  queuedWebhookDeliveries: number;
  /** Webhook events (with their deliveries) older than 30 days, deleted. */
  deletedWebhookEvents: number;
}

export async function runMaintenance(env: Env): Promise<MaintenanceResult> {
  const { db, pool } = createDatabase(env);
  try {
    // Sweep first: a stale call's hold must still count when it is booked.
    const swept = await sweepStaleCalls(db, env);
    const result = {
      sweptCalls: swept.booked,
      expiredHolds: await expireHolds(db),
      rolledUpWallets: await rollUpBalances(db),
      rolledUpUsageEvents: await rollUpUsage(db),
      deletedCallLogRows: await deleteExpiredCallLog(db),
      queuedWebhookDeliveries: (await relayNow(env)) + (await requeueLostDeliveries(db, relayTarget(env))),
      deletedWebhookEvents: await deleteOldWebhookRecords(db),
    };
    createLogger({ service: 'api' }, env.LOG_LEVEL).info('maintenance', {
      swept_calls: result.sweptCalls,
      expired_holds: result.expiredHolds,
      rolled_up_wallets: result.rolledUpWallets,
      rolled_up_usage_events: result.rolledUpUsageEvents,
      deleted_call_log_rows: result.deletedCallLogRows,
      queued_webhook_deliveries: result.queuedWebhookDeliveries,
      deleted_webhook_events: result.deletedWebhookEvents,
    });
    return result;
  } finally {
    await pool.end();
  }
}
