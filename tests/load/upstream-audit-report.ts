/**
 * The upstream audit at the end of a reliability run (DESIGN §5): what the platform paid upstream
 * against what it billed. From Faucet's own call records always (`auditGatewayCalls`); against a
 * fake upstream's own log of answered calls when the run had one (`auditUpstreamCalls`). Printed as
 * `unbilled upstream calls: N, unbilled upstream tokens: M`, beside reconciliation.
 */
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import {
  auditGatewayCalls,
  auditUpstreamCalls,
  type GatewayCallAuditResult,
  type ReportedUpstreamCall,
  type UpstreamAuditResult,
} from '#shared/calls/upstream-audit.ts';

export interface UpstreamAuditReport {
  ok: boolean;
  unbilledCalls: number;
  unbilledTokens: number;
  gateway: GatewayCallAuditResult;
  upstream: UpstreamAuditResult | null;
}

export async function runUpstreamAudit(
  databaseUrl: string,
  options: { settleGraceSeconds: number; reported?: ReportedUpstreamCall[] },
): Promise<UpstreamAuditReport> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  try {
    const db = drizzle(pool);
    const gateway = await auditGatewayCalls(db, options.settleGraceSeconds);
    const upstream = options.reported === undefined ? null : await auditUpstreamCalls(db, options.reported);
    // Faucet's own records catch calls it authorized and never booked; the provider's log catches
    // those and under-billed ones too. A call unbilled in both is counted once.
    const unbilledCalls = Math.max(gateway.unbilledCalls, upstream?.unbilledCalls ?? 0);
    const unbilledTokens = upstream?.unbilledTokens ?? 0;
    const ok = gateway.ok && (upstream?.ok ?? true);
    return { ok, unbilledCalls, unbilledTokens, gateway, upstream };
  } finally {
    await pool.end();
  }
}

export function formatUpstreamAudit(report: UpstreamAuditReport): string {
  const lines = [`unbilled upstream calls: ${report.unbilledCalls}, unbilled upstream tokens: ${report.unbilledTokens}`];
  const gateway = report.gateway;
  lines.push(
    `  gateway call records: ${gateway.paidCalls} paid calls judged, ${gateway.unbilledCalls} without a booking, ${gateway.inFlight} still in flight, ${gateway.receivableBookings} bookings with a receivable`,
  );
  if (report.upstream !== null) {
    const upstream = report.upstream;
    lines.push(
      `  provider log: ${upstream.upstreamCalls} calls answered upstream, ${upstream.unbilledCalls} unbilled, ${upstream.unbilledTokens} tokens unbilled, ${upstream.doubleBilledCalls} double-billed`,
    );
    for (const finding of upstream.findings) {
      lines.push(
        `  ${finding.problem}: call ${finding.callId}, provider billed ${finding.reportedTokens} tokens, booked ${finding.bookedTokens}`,
      );
    }
  }
  return lines.join('\n');
}
