/**
 * The developer's request log (docs/request-log.md): their calls, newest first, filtered, a keyset
 * page at a time; and one call in full. Rows are `gateway_call_log` (how the call went, written by the
 * wallet object's flush) joined with the call's usage record (its tokens and money: the booking,
 * `usage_events.request_id = 'call:<id>'`, a unique-index probe). Every statement is limited to the
 * developer's own apps: another developer's call is not found.
 */
import { sql, type SQL } from 'drizzle-orm';
import { queryRows, type SqlDatabase } from '../query.ts';
import type { CallLogRow, CallOutcome, CallSurface } from './call-log.ts';
import { parseTimeCursor, timeCursor } from '../wire/time-cursor.ts';

export interface CallFilters {
  /** Row ids, already checked to be the developer's. */
  appId?: string | null;
  endUserIds?: string[] | null;
  feature?: string;
  /** Matches the model asked for or the one that answered (`provider:model` or the bare name). */
  model?: string;
  provider?: string;
  route?: string;
  /** `estimated`: answered or cut and billed on Faucet's estimate. */
  outcome?: CallOutcome | 'estimated';
  errorCode?: string;
  surface?: CallSurface;
  from?: string;
  to?: string;
  requestId?: string;
}

/** One call as the log and its booking tell it (a join; no table has this shape). */
export type CallLogViewRow = Omit<CallLogRow, 'app_id' | 'provider_credential_id' | 'attempts'> & {
  public_app_id: string;
  attempts: unknown[] | null;
  masked_key: string | null;
  /** `YYYY-MM-DDTHH:MM:SS.ffffffZ`: microseconds kept, so the cursor is exact. */
  created_at: string;
  /** The booking's, all null when nothing was billed. */
  estimated: boolean | null;
  input_tokens: number | null;
  cached_tokens: number | null;
  /** Every cache write: five-minute and one-hour (usage_events keeps them apart). */
  cache_write_tokens: number | null;
  audio_input_tokens: number | null;
  output_tokens: number | null;
  reasoning_tokens: number | null;
  audio_output_tokens: number | null;
  upstream_cost_usd: string | null;
  retail_usd: string | null;
  developer_revenue_usd: string | null;
  platform_share_usd: string | null;
  receivable_usd: string | null;
};

export interface CallPage {
  rows: CallLogViewRow[];
  nextCursor: string | null;
}

const columns = sql`l.id, a.public_app_id, l.end_user_id, l.feature_key, l.surface, l.requested_model, l.provider, l.model,
  l.route_mode, l.outcome, l.error_code, l.error_message, l.client_request_id, l.stream, l.authorize_ms, l.first_byte_ms,
  l.total_ms, l.attempts, k.masked_key,
  to_char(l.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at,
  e.estimated, e.input_tokens, e.cached_tokens, e.cache_write_tokens + e.cache_write_1h_tokens as cache_write_tokens,
  e.audio_input_tokens, e.output_tokens,
  e.reasoning_tokens, e.audio_output_tokens, e.upstream_cost_usd::text, e.retail_usd::text, e.developer_revenue_usd::text,
  e.platform_share_usd::text, e.receivable_usd::text`;

const joins = sql`join apps a on a.id = l.app_id
  left join usage_events e on e.request_id = 'call:' || l.id::text
  left join provider_credentials k on k.id = l.provider_credential_id`;

/** The filters as conditions on `l` (the log) and `e` (the booking); each absent one is left out of the statement. */
function conditions(filters: CallFilters): SQL[] {
  const where: SQL[] = [];
  if (filters.appId) where.push(sql`l.app_id = ${filters.appId}::uuid`);
  // As one array parameter (a JS array would be spread into a list); the ids are the database's own uuids.
  // One id (what the routes pass) as an equality: `= any(…)` is not read in the index's order, so a busy
  // end user's calls would all be fetched and sorted.
  if (filters.endUserIds?.length === 1) where.push(sql`l.end_user_id = ${filters.endUserIds[0]}::uuid`);
  else if (filters.endUserIds) where.push(sql`l.end_user_id = any(${`{${filters.endUserIds.join(',')}}`}::uuid[])`);
  if (filters.feature !== undefined) where.push(sql`l.feature_key = ${filters.feature}`);
  if (filters.model !== undefined) {
    const bare = filters.model.includes(':') ? filters.model.slice(filters.model.indexOf(':') + 1) : filters.model;
    where.push(sql`(l.requested_model = ${filters.model} or l.model = ${bare} or l.provider || ':' || l.model = ${filters.model})`);
  }
  if (filters.provider !== undefined) where.push(sql`l.provider = ${filters.provider}`);
  if (filters.route !== undefined) where.push(sql`l.route_mode = ${filters.route}`);
  if (filters.outcome === 'estimated') where.push(sql`e.estimated`);
  else if (filters.outcome !== undefined) where.push(sql`l.outcome = ${filters.outcome}`);
  if (filters.errorCode !== undefined) where.push(sql`l.error_code = ${filters.errorCode}`);
  if (filters.surface !== undefined) where.push(sql`l.surface = ${filters.surface}`);
  if (filters.from !== undefined) where.push(sql`l.created_at >= ${filters.from}::timestamptz`);
  if (filters.to !== undefined) where.push(sql`l.created_at < ${filters.to}::timestamptz`);
  if (filters.requestId !== undefined) where.push(sql`l.client_request_id = ${filters.requestId}`);
  return where;
}

/**
 * A page of the developer's calls, newest first; the cursor carries (created_at, id) of the page's last row.
 *
 * An app's calls, or an end user's, are one walk of their own index. Otherwise each of the developer's
 * apps gives its newest matching rows through its (app_id, created_at, id) or (app_id,
 * client_request_id) index, and the page is the newest of those, read whole only then (ids alone from
 * the index when no filter needs the row). A join of the whole log with the developer's apps walked
 * the table's time index through every other developer's newer calls: a small developer's page took
 * 0.1–1.6 s over a million calls (`npm run bench -- calls`).
 */
export async function listCalls(
  db: SqlDatabase,
  query: { developerId: string; filters: CallFilters; limit: number; cursor: string | undefined },
): Promise<CallPage> {
  const after = parseTimeCursor(query.cursor);
  const where = conditions(query.filters);
  if (after !== null) where.push(sql`(l.created_at, l.id) < (${after.at}::timestamptz, ${after.id}::uuid)`);
  const owner = sql`a.developer_id = ${query.developerId}::uuid`;
  const order = sql`order by l.created_at desc, l.id desc limit ${query.limit + 1}`;
  const rows = await queryRows<CallLogViewRow>(
    db,
    query.filters.endUserIds || query.filters.appId
      ? sql`select ${columns} from gateway_call_log l ${joins} where ${sql.join([owner, ...where], sql` and `)} ${order}`
      : sql`select ${columns} from (
              select l.id from apps a cross join lateral (
                select l.id, l.created_at from gateway_call_log l
                  ${
                    // `e.estimated`: an index-only probe of usage_events_estimated_request, nothing for most calls.
                    query.filters.outcome === 'estimated' ? sql`join usage_events e on e.request_id = 'call:' || l.id::text` : sql``
                  }
                 where ${sql.join([sql`l.app_id = a.id`, ...where], sql` and `)} ${order}) l
               where ${owner} ${order}) page
            join gateway_call_log l on l.id = page.id
            ${joins} ${order}`,
  );
  const more = rows.length > query.limit;
  const shown = rows.slice(0, query.limit);
  const last = shown.at(-1);
  return { rows: shown, nextCursor: more && last ? timeCursor(last) : null };
}

/** One of the developer's calls by its id (Faucet's call id), or undefined: unknown, or another developer's. */
export async function findCall(db: SqlDatabase, query: { developerId: string; callId: string }): Promise<CallLogViewRow | undefined> {
  const [row] = await queryRows<CallLogViewRow>(
    db,
    sql`select ${columns} from gateway_call_log l ${joins}
         where l.id = ${query.callId}::uuid and a.developer_id = ${query.developerId}::uuid`,
  );
  return row;
}

/** Deletes call details older than each app's retention (the cron); usage records and the ledger are never touched. */
export async function deleteExpiredCallLog(db: SqlDatabase, batch = 5000): Promise<number> {
  const rows = await queryRows<{ deleted: number }>(
    db,
    sql`with expired as (
          -- Per app, through its (app_id, created_at) index: the oldest calls of every app are all near its index's end.
          select l.id from apps a cross join lateral (
            select l.id from gateway_call_log l
             where l.app_id = a.id and l.created_at < now() - make_interval(days => a.call_log_retention_days)
             limit ${batch}) l
           limit ${batch}
        ), gone as (delete from gateway_call_log l using expired x where l.id = x.id returning 1)
        select count(*)::integer as deleted from gone`,
  );
  return rows[0]?.deleted ?? 0;
}
