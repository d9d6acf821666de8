/**
 * A developer's end users across their apps (or one app), most recently seen first, a page at a
 * time (docs/developers.md, "Money"). Last seen is the latest of the user's first appearance, their
 * newest session and their newest usage event; the page order is (last seen, id) descending and the
 * cursor carries both, so a page never repeats or skips a row that did not change meanwhile (a user
 * seen again while you page moves to the front).
 *
 * The statement sorts on index lookups per user (usage_events and virtual_sessions by end user) and
 * sums spend and reads balances for the page's rows only. No raw user id exists to return: only the
 * end user's row id, which the route turns into the `user_ref` of `POST /v1/sessions`.
 */
import { sql } from 'drizzle-orm';
import { queryRows, type SqlDatabase } from '../query.ts';
import { parseTimeCursor } from '../wire/time-cursor.ts';

/** An aggregate per end user; no table describes it. */
export interface EndUserSummaryRow {
  end_user_id: string;
  public_app_id: string;
  /** `YYYY-MM-DDTHH:MM:SS.ffffffZ`: microseconds kept, so the cursor is exact. */
  last_seen_at: string;
  created_at: string;
  spend: string;
  requests: number;
  balance: string;
}

export interface EndUserPage {
  rows: EndUserSummaryRow[];
  nextCursor: string | null;
}

const utc = (column: string) => sql.raw(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`);

/** `appId`: the app's row id, already checked to be the developer's (null: every app of theirs). */
export async function listEndUsers(
  db: SqlDatabase,
  query: { developerId: string; appId: string | null; limit: number; cursor: string | undefined },
): Promise<EndUserPage> {
  const after = parseTimeCursor(query.cursor);
  const rows = await queryRows<EndUserSummaryRow>(
    db,
    sql`with seen as (
          select u.id, a.public_app_id, u.created_at,
                 greatest(u.created_at,
                          (select max(e.created_at) from usage_events e where e.end_user_id = u.id),
                          (select max(s.created_at) from virtual_sessions s where s.end_user_id = u.id)) as last_seen
            from end_users u join apps a on a.id = u.app_id
           where a.developer_id = ${query.developerId}::uuid
             and (${query.appId}::uuid is null or a.id = ${query.appId}::uuid)
        ), page as (
          select * from seen
           where ${after?.at ?? null}::timestamptz is null
              or (last_seen, id) < (${after?.at ?? null}::timestamptz, ${after?.id ?? null}::uuid)
           order by last_seen desc, id desc
           limit ${query.limit + 1}
        )
        select p.id as end_user_id, p.public_app_id, ${utc('p.last_seen')} as last_seen_at, ${utc('p.created_at')} as created_at,
               spent.total::text as spend, spent.requests, coalesce(faucet_wallet_balance(w.id), 0)::numeric(20, 8)::text as balance
          from page p
          left join wallets w on w.end_user_id = p.id
          cross join lateral (select coalesce(sum(e.retail_usd), 0)::numeric(20, 8) as total, count(*)::integer as requests
                                from usage_events e where e.end_user_id = p.id) spent
         order by p.last_seen desc, p.id desc`,
  );
  const more = rows.length > query.limit;
  const shown = rows.slice(0, query.limit);
  const last = shown.at(-1);
  return { rows: shown, nextCursor: more && last ? `${last.last_seen_at}_${last.end_user_id}` : null };
}
