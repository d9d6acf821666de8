/**
 * The outbox relay (docs/webhooks.md): claims the events the triggers wrote and not yet relayed, makes
 * one delivery per enabled endpoint of the event's developer subscribed to its type, and queues each.
 * Claiming and making the deliveries is one statement (an event is relayed once, whoever runs the
 * relay); queueing follows it, and a delivery whose message was lost is queued again by the cron once
 * it is long past its time (at least once: the event id lets a receiver drop a repeat).
 */
import { sql } from 'drizzle-orm';
import { queryRows, type SqlDatabase } from '../query.ts';
import type { WebhookMessage } from './webhook-message.ts';

const eventsPerStatement = 100;
/** One run relays at most this many statements' worth; the next kick or cron takes the rest. */
const statementsPerRun = 20;
/** A queue's sendBatch takes at most 100 messages. */
const messagesPerBatch = 100;
/** A pending delivery this long past its time lost its message: queue it again. */
const lostAfterMinutes = 10;

export interface RelayTarget {
  queue: Queue<WebhookMessage> | undefined;
  /** Tests only: the per-file database the consumer must read. */
  databaseUrl?: string | null;
}

/** Relays every waiting event (up to a bound); answers how many deliveries it queued. */
export async function relayWebhookEvents(db: SqlDatabase, target: RelayTarget): Promise<number> {
  let queued = 0;
  for (let statement = 0; statement < statementsPerRun; statement++) {
    const rows = await queryRows<{ delivery_id: string | null; events: number }>(
      db,
      sql`with claimed as (
            update webhook_events e set relayed_at = now()
             where e.id in (select id from webhook_events where relayed_at is null
                             order by created_at limit ${eventsPerStatement} for update skip locked)
            returning e.id, e.developer_id, e.type
          ),
          made as (
            insert into webhook_deliveries (event_id, endpoint_id, developer_id)
            select c.id, w.id, c.developer_id from claimed c
              join webhook_endpoints w on w.developer_id = c.developer_id and w.deleted_at is null and w.enabled
                                      and (c.type = any (w.event_types) or '*' = any (w.event_types))
            on conflict (event_id, endpoint_id) do nothing
            returning id
          )
          select m.id as delivery_id, (select count(*)::int from claimed) as events from (select 1) one left join made m on true`,
    );
    const ids = rows.flatMap((row) => (row.delivery_id === null ? [] : [row.delivery_id]));
    await queueDeliveries(target, ids);
    queued += ids.length;
    if ((rows[0]?.events ?? 0) < eventsPerStatement) break;
  }
  return queued;
}

/** Queues again the pending deliveries long past their time (their message was lost); answers how many. */
export async function requeueLostDeliveries(db: SqlDatabase, target: RelayTarget): Promise<number> {
  const rows = await queryRows<{ id: string }>(
    db,
    sql`update webhook_deliveries set next_attempt_at = now()
         where id in (select id from webhook_deliveries
                       where status = 'pending' and next_attempt_at < now() - make_interval(mins => ${lostAfterMinutes})
                       order by next_attempt_at limit 500)
        returning id`,
  );
  await queueDeliveries(
    target,
    rows.map((row) => row.id),
  );
  return rows.length;
}

export async function queueDeliveries(target: RelayTarget, deliveryIds: readonly string[]): Promise<void> {
  if (target.queue === undefined || deliveryIds.length === 0) return;
  const database = target.databaseUrl ? { databaseUrl: target.databaseUrl } : {};
  for (let start = 0; start < deliveryIds.length; start += messagesPerBatch) {
    const messages = deliveryIds
      .slice(start, start + messagesPerBatch)
      .map((deliveryId): { body: WebhookMessage } => ({ body: { kind: 'deliver', deliveryId, ...database } }));
    await target.queue.sendBatch(messages);
  }
}

/** Wakes the relay through the queue (a producer that wrote events and cannot relay itself: the gateway). */
export async function kickRelay(target: RelayTarget): Promise<void> {
  if (target.queue === undefined) return;
  await target.queue.send({ kind: 'relay', ...(target.databaseUrl ? { databaseUrl: target.databaseUrl } : {}) });
}
