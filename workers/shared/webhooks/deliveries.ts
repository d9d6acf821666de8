/**
 * The delivery log of a developer's endpoint (docs/webhooks.md): each delivery of an event, newest
 * first, with its state and its attempts; a resend puts a delivery back in the queue (pending, its
 * attempts start again) with the same event id, so the receiver recognises it.
 */
import { sql } from 'drizzle-orm';
import { queryRows, type SqlDatabase } from '../query.ts';
import { cursorTimeFormat, parseTimeCursor, timeCursor } from '../wire/time-cursor.ts';
import type { StoredEvent } from './render-event.ts';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: string | null;
  /** With microseconds (the cursor's time). */
  created_at: string;
  event: StoredEvent;
}

export interface AttemptRow {
  attempted_at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

const iso = (column: string) => sql.raw(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);

const columns = sql`d.id, d.endpoint_id, d.status, d.attempts, ${iso('d.next_attempt_at')} as next_attempt_at,
  ${iso('d.last_attempt_at')} as last_attempt_at, d.last_status, d.last_error, ${iso('d.delivered_at')} as delivered_at,
  to_char(d.created_at at time zone 'UTC', ${cursorTimeFormat}) as created_at,
  jsonb_build_object('id', e.id, 'type', e.type, 'data', e.data, 'created_at', ${iso('e.created_at')},
    'public_app_id', (select a.public_app_id from apps a where a.id = (e.data ->> 'app_id')::uuid)) as event`;

export async function listDeliveries(
  db: SqlDatabase,
  query: { developerId: string; endpointId: string; status: DeliveryStatus | undefined; limit: number; cursor: string | undefined },
): Promise<{ rows: DeliveryRow[]; nextCursor: string | null }> {
  const after = parseTimeCursor(query.cursor);
  const rows = await queryRows<DeliveryRow>(
    db,
    sql`select ${columns} from webhook_deliveries d join webhook_events e on e.id = d.event_id
         where d.endpoint_id = ${query.endpointId}::uuid and d.developer_id = ${query.developerId}::uuid
           ${query.status === undefined ? sql`` : sql`and d.status = ${query.status}`}
           ${after === null ? sql`` : sql`and (d.created_at, d.id) < (${after.at}::timestamptz, ${after.id}::uuid)`}
         order by d.created_at desc, d.id desc limit ${query.limit + 1}`,
  );
  const shown = rows.slice(0, query.limit);
  const last = shown.at(-1);
  return { rows: shown, nextCursor: rows.length > query.limit && last ? timeCursor(last) : null };
}

/** One delivery of the developer's endpoint with its attempts, or undefined (unknown, or not theirs). */
export async function findDelivery(
  db: SqlDatabase,
  query: { developerId: string; endpointId: string; deliveryId: string },
): Promise<(DeliveryRow & { attempt_log: AttemptRow[] }) | undefined> {
  const [row] = await queryRows<DeliveryRow & { attempt_log: AttemptRow[] }>(
    db,
    sql`select ${columns},
               coalesce((select jsonb_agg(jsonb_build_object('attempted_at', ${iso('t.attempted_at')}, 'status_code', t.status_code,
                                                             'error', t.error, 'duration_ms', t.duration_ms) order by t.attempted_at)
                           from webhook_delivery_attempts t where t.delivery_id = d.id), '[]'::jsonb) as attempt_log
          from webhook_deliveries d join webhook_events e on e.id = d.event_id
         where d.id = ${query.deliveryId}::uuid and d.endpoint_id = ${query.endpointId}::uuid
           and d.developer_id = ${query.developerId}::uuid`,
  );
  return row;
}

/**
 * Puts a delivery back in the queue, due now: a delivered or failed one starts its attempts again, a
 * pending one (waiting for its next retry) is tried now rather than at its time. The same event id
 * goes out, so a receiver that already has it drops the repeat. False when it is not the developer's
 * or its endpoint is deleted.
 */
export async function markForResend(
  db: SqlDatabase,
  query: { developerId: string; endpointId: string; deliveryId: string },
): Promise<boolean> {
  const rows = await queryRows<{ id: string }>(
    db,
    sql`update webhook_deliveries d set status = 'pending', next_attempt_at = now()
          from webhook_endpoints w
         where d.id = ${query.deliveryId}::uuid and d.endpoint_id = ${query.endpointId}::uuid
           and d.developer_id = ${query.developerId}::uuid and w.id = d.endpoint_id and w.deleted_at is null
        returning d.id`,
  );
  return rows.length > 0;
}

/** Deletes deliveries, their attempts and events older than `days` (the cron); the ledger is never touched. */
export async function deleteOldWebhookRecords(db: SqlDatabase, days = 30, batch = 5000): Promise<number> {
  const rows = await queryRows<{ deleted: number }>(
    db,
    sql`with old as (
          select id from webhook_events where created_at < now() - make_interval(days => ${days}) and relayed_at is not null
           order by created_at limit ${batch}
        ),
        old_deliveries as (select d.id from webhook_deliveries d where d.event_id in (select id from old)),
        attempts as (delete from webhook_delivery_attempts t where t.delivery_id in (select id from old_deliveries) returning 1),
        deliveries as (delete from webhook_deliveries d where d.id in (select id from old_deliveries) returning 1),
        events as (delete from webhook_events e where e.id in (select id from old) returning 1)
        select (select count(*)::integer from events) as deleted`,
  );
  return rows[0]?.deleted ?? 0;
}
