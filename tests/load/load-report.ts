/** The figures of a load run: requests, errors by code, p50/p99 per kind, gateway calls per second. */
import type { LoadResult, OperationKind } from './load-run.ts';
import type { BooksReport } from './verify-books.ts';

export interface KindFigures {
  kind: OperationKind;
  requests: number;
  errors: Record<string, number>;
  p50Ms: number;
  p99Ms: number;
}

export interface LoadSummary {
  kinds: KindFigures[];
  totalRequests: number;
  gatewayCalls: number;
  gatewayCallsPerSecond: number;
  mainPhaseSeconds: number;
}

/** Nearest-rank percentile of an ascending list. */
export function percentile(sorted: number[], fraction: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))]!;
}

export function summarize(result: LoadResult): LoadSummary {
  const kinds = [...new Set(result.operations.map((operation) => operation.kind))].map((kind) => {
    const ofKind = result.operations.filter((operation) => operation.kind === kind);
    const durations = ofKind.map((operation) => operation.ms).sort((a, b) => a - b);
    const errors: Record<string, number> = {};
    for (const operation of ofKind) if (operation.code) errors[operation.code] = (errors[operation.code] ?? 0) + 1;
    return { kind, requests: ofKind.length, errors, p50Ms: percentile(durations, 0.5), p99Ms: percentile(durations, 0.99) };
  });
  const gatewayCalls = result.calls.length;
  const mainPhaseSeconds = result.mainPhaseMs / 1000;
  return {
    kinds,
    totalRequests: result.operations.length,
    gatewayCalls,
    gatewayCallsPerSecond: mainPhaseSeconds > 0 ? gatewayCalls / mainPhaseSeconds : 0,
    mainPhaseSeconds,
  };
}

export function formatSummary(result: LoadResult, summary: LoadSummary, books: BooksReport): string {
  const lines = [
    `run ${result.runId}: ${result.plan.users} users, ${result.plan.calls} calls planned, concurrency ${result.plan.concurrency} + ${result.plan.moneyActors} money actors` +
      (result.faultsInjected ? `, database connections cut ${result.faultsInjected} times` : ''),
    `${'operation'.padEnd(20)}${'requests'.padStart(9)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}  errors by code`,
    ...summary.kinds.map(
      (kind) =>
        `${kind.kind.padEnd(20)}${String(kind.requests).padStart(9)}${kind.p50Ms.toFixed(1).padStart(9)}${kind.p99Ms.toFixed(1).padStart(9)}  ${
          Object.entries(kind.errors)
            .map(([code, count]) => `${code}=${count}`)
            .join(' ') || '-'
        }`,
    ),
    `total requests ${summary.totalRequests}; gateway calls ${summary.gatewayCalls} in ${summary.mainPhaseSeconds.toFixed(1)} s = ${summary.gatewayCallsPerSecond.toFixed(1)} calls/s`,
    `books: reconciliation ${books.reconciliationOk ? 'ok' : 'NOT OK'}; usage rows ${books.usageRows}, usage transactions ${books.usageTransactions}; ` +
      `user usage debits ${books.userUsageDebitsUsd} USD = rated retail ${books.ratedRetailUsd} USD: ${books.userUsageDebitsUsd === books.ratedRetailUsd ? 'yes' : 'NO'}; ` +
      `top-ups credited once ${books.topUpsCredited}/${result.paidCheckouts.length}; ambiguous calls ${books.ambiguousCalls}`,
    ...[...result.problems, ...books.problems].map((problem) => `PROBLEM ${problem}`),
  ];
  return lines.join('\n');
}

/** After the database is back, this long for the stack to find it again (connections re-opened). */
export const outageRecoveryMs = 5_000;

/**
 * The server errors of a run with database faults. 503 `unavailable` (with `retry-after`) is the
 * expected answer to a request that needed the database while it was away; a 500 is a failure.
 */
export interface DatabaseFaultFigures {
  unavailable: number;
  unavailableWithoutRetryAfter: number;
  /** 503s answered outside the outage and its recovery (an outage run only). */
  unavailableOutsideOutage: number;
  internalErrors: number;
  /** Gateway calls answered while the database was away: served (on leases), 503, 500. */
  outageCalls: { total: number; served: number; unavailable: number; internalErrors: number } | null;
}

export function databaseFaultFigures(result: LoadResult): DatabaseFaultFigures {
  const unavailable = result.operations.filter((operation) => operation.status === 503 && operation.code === 'unavailable');
  const { outage } = result;
  const windowStart = outage ? result.mainPhaseStartedAt + outage.beganMs : 0;
  const windowEnd = outage ? result.mainPhaseStartedAt + outage.endedMs + outageRecoveryMs : 0;
  const during = outage ? result.calls.filter((call) => call.answeredMs >= outage.beganMs && call.sentMs < outage.endedMs) : null;
  return {
    unavailable: unavailable.length,
    unavailableWithoutRetryAfter: unavailable.filter((operation) => operation.retryAfter === null).length,
    unavailableOutsideOutage: outage
      ? unavailable.filter((operation) => operation.endedAt < windowStart || operation.endedAt > windowEnd).length
      : 0,
    internalErrors: result.operations.filter((operation) => operation.status === 500).length,
    outageCalls: during && {
      total: during.length,
      served: during.filter((call) => call.status === 200 && call.code === null).length,
      unavailable: during.filter((call) => call.status === 503 && call.code === 'unavailable').length,
      internalErrors: during.filter((call) => call.status === 500).length,
    },
  };
}
