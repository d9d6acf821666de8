/**
 * The upstream audit (DESIGN §5): the ledger agrees with what the platform paid upstream. Every
 * upstream call on a paid route (platform, developer_key) has exactly one booking, with at least
 * the tokens the provider reported. Reconciliation cannot see this: a call never billed leaves the
 * books balanced.
 *
 * Two sources of "what was paid upstream":
 * - `auditUpstreamCalls(db, reported)`: a list of upstream calls as the provider saw them (in tests,
 *   the fake upstreams' own log; in production, a provider's usage export where it has per-request
 *   rows), matched to bookings by the call id Faucet sent upstream (`x-client-request-id`).
 * - `auditGatewayCalls(db)`: from Faucet's own call records: every paid call that is closed (or past
 *   its deadline and grace) has its booking. It sees calls the gateway authorized, not calls a
 *   provider billed without Faucet knowing (there are none by construction: every upstream call
 *   goes through an authorized call).
 */
import { sql } from 'drizzle-orm';
import { queryRows, type SqlDatabase } from '../query.ts';

export interface ReportedUpstreamCall {
  /**
   * The id Faucet sent upstream (`x-client-request-id`): the gateway call's id for its first attempt,
   * `<call id>:<n>` for a fallback attempt (docs/models.md, "Fallback and aliases").
   */
  callId: string;
  inputTokens: number;
  outputTokens: number;
  /** The provider answered this attempt with an error and billed nothing: it needs no booking. */
  failed?: boolean;
}

/** The gateway call an attempt id belongs to. */
export function callIdOfAttempt(attemptId: string): string {
  const colon = attemptId.indexOf(':');
  return colon < 0 ? attemptId : attemptId.slice(0, colon);
}

export interface UpstreamAuditResult {
  ok: boolean;
  upstreamCalls: number;
  unbilledCalls: number;
  /** Tokens the provider reported above what was booked, summed over calls (unbilled calls count whole). */
  unbilledTokens: number;
  /** Calls booked more than once (impossible by the unique money key; checked anyway). */
  doubleBilledCalls: number;
  /** Up to 20 examples, by call id. */
  findings: Array<{ callId: string; problem: 'unbilled' | 'under_billed' | 'double_billed'; reportedTokens: number; bookedTokens: number }>;
}

interface BookedRow {
  call_id: string;
  bookings: number;
  input_tokens: number;
  output_tokens: number;
}

export async function auditUpstreamCalls(db: SqlDatabase, reported: ReportedUpstreamCall[]): Promise<UpstreamAuditResult> {
  // A failed attempt (an error, no tokens) is fine; the call's answering attempt must be booked once.
  const answered = reported
    .filter((call) => !(call.failed === true && call.inputTokens === 0 && call.outputTokens === 0))
    .map((call) => ({ ...call, callId: callIdOfAttempt(call.callId) }));
  const ids = [...new Set(answered.map((call) => call.callId))];
  const booked = new Map<string, BookedRow>();
  for (let offset = 0; offset < ids.length; offset += 1000) {
    const slice = ids.slice(offset, offset + 1000);
    const rows = await queryRows<BookedRow>(
      db,
      sql`select g.id::text as call_id, count(u.id)::int as bookings,
                 coalesce(sum(u.input_tokens), 0)::int as input_tokens, coalesce(sum(u.output_tokens), 0)::int as output_tokens
            from gateway_calls g left join usage_events u on u.request_id = g.money_key
           where g.id::text in (${sql.join(
             slice.map((id) => sql`${id}`),
             sql`, `,
           )})
           group by g.id`,
    );
    for (const row of rows) booked.set(row.call_id, row);
  }
  const result: UpstreamAuditResult = {
    ok: true,
    upstreamCalls: reported.length,
    unbilledCalls: 0,
    unbilledTokens: 0,
    doubleBilledCalls: 0,
    findings: [],
  };
  const note = (finding: UpstreamAuditResult['findings'][number]) => {
    result.ok = false;
    if (result.findings.length < 20) result.findings.push(finding);
  };
  // One answering provider call per gateway call; a gateway call answered twice upstream is itself a finding.
  const seen = new Map<string, number>();
  for (const call of answered) seen.set(call.callId, (seen.get(call.callId) ?? 0) + 1);
  for (const call of answered) {
    const row = booked.get(call.callId);
    const reportedTokens = call.inputTokens + call.outputTokens;
    if (row === undefined || row.bookings === 0) {
      result.unbilledCalls += 1;
      result.unbilledTokens += reportedTokens;
      note({ callId: call.callId, problem: 'unbilled', reportedTokens, bookedTokens: 0 });
      continue;
    }
    if (row.bookings > 1 || (seen.get(call.callId) ?? 0) > 1) {
      result.doubleBilledCalls += 1;
      note({ callId: call.callId, problem: 'double_billed', reportedTokens, bookedTokens: row.input_tokens + row.output_tokens });
    }
    const short = Math.max(0, call.inputTokens - row.input_tokens) + Math.max(0, call.outputTokens - row.output_tokens);
    if (short > 0) {
      result.unbilledTokens += short;
      note({ callId: call.callId, problem: 'under_billed', reportedTokens, bookedTokens: row.input_tokens + row.output_tokens });
    }
  }
  return result;
}

export interface GatewayCallAuditResult {
  ok: boolean;
  /** Paid calls that are settled or past their deadline and grace. */
  paidCalls: number;
  /** Of those, calls with no booking. */
  unbilledCalls: number;
  /** Paid calls still in flight within their deadline (not judged yet). */
  inFlight: number;
  /** Bookings written above what the wallet covered (receivables), for the report. */
  receivableBookings: number;
}

export async function auditGatewayCalls(db: SqlDatabase, settleGraceSeconds: number): Promise<GatewayCallAuditResult> {
  const [row] = await queryRows<{ paid: number; unbilled: number; in_flight: number; receivable: number }>(
    db,
    sql`select count(*) filter (where judged)::int as paid,
               count(*) filter (where judged and not booked)::int as unbilled,
               count(*) filter (where not judged)::int as in_flight,
               (select count(*)::int from usage_events where receivable_usd > 0 and call_id is not null) as receivable
          from (select g.status <> 'in_flight' or g.deadline_at + make_interval(secs => ${settleGraceSeconds}::integer) < now() as judged,
                       exists (select 1 from usage_events u where u.request_id = g.money_key) as booked
                  from gateway_calls g
                 where g.route_mode in ('platform', 'developer_key') and g.status <> 'abandoned') calls`,
  );
  const paidCalls = row?.paid ?? 0;
  const unbilledCalls = row?.unbilled ?? 0;
  return { ok: unbilledCalls === 0, paidCalls, unbilledCalls, inFlight: row?.in_flight ?? 0, receivableBookings: row?.receivable ?? 0 };
}
