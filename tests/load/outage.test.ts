/**
 * Each call booked exactly once across a PostgreSQL outage of a minute during load. A
 * stack of its own (its own PostgreSQL server) runs a load of plain and streamed calls with top-ups,
 * adjustments and payouts beside them; a third of the way in its PostgreSQL server is stopped
 * (fast shutdown: every connection cut, every transaction in progress aborted) and started again a
 * minute later, while the clients go on. Wallet objects holding a lease serve calls for as long as
 * their session context may be kept (10 s), hold what they settled until the database is back, and
 * book it then; everything else is refused 503 `unavailable` with `retry-after` (a dependency's
 * failure, never a 500). Then every cent is checked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseFaultFigures, formatSummary, outageRecoveryMs, summarize } from './load-report.ts';
import { runLoad } from './load-run.ts';
import { startReliabilityStack, type ReliabilityStack } from './reliability-stack.ts';
import { flushWallets, sampleReconciliation } from './stack-client.ts';
import { formatUpstreamAudit, runUpstreamAudit } from './upstream-audit-report.ts';
import { verifyBooks } from './verify-books.ts';

const OUTAGE_MS = 60_000;
const RECOVERY_MS = outageRecoveryMs;

describe('a minute-long PostgreSQL outage during a load run', () => {
  let stack: ReliabilityStack;
  beforeAll(async () => {
    stack = await startReliabilityStack();
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('loses no call and books none twice: served calls are booked once when the database is back', async () => {
    const sampler = sampleReconciliation(stack);
    const result = await runLoad(stack, {
      users: 4,
      calls: 90,
      concurrency: 4,
      moneyActors: 1,
      maxDurationMs: OUTAGE_MS + 120_000,
      outage: { atCall: 30, durationMs: OUTAGE_MS, begin: () => stack.postgres.stop(), end: () => stack.postgres.start() },
    });
    const sampled = await sampler.stop();
    const outage = result.outage!;
    expect(outage.endedMs - outage.beganMs).toBeGreaterThanOrEqual(OUTAGE_MS);

    // Before: answered before the database went away. A call still in flight when it went counts as
    // during it (the statement it waited on may have been cut).
    const before = result.calls.filter((call) => call.answeredMs < outage.beganMs);
    const during = result.calls.filter((call) => call.answeredMs >= outage.beganMs && call.sentMs < outage.endedMs);
    const after = result.calls.filter((call) => call.sentMs >= outage.endedMs);
    const recovered = after.filter((call) => call.sentMs >= outage.endedMs + RECOVERY_MS);
    const served = (calls: typeof result.calls) => calls.filter((call) => call.status === 200 && call.code === null);
    expect(served(before)).toEqual(before);
    // Calls go on for a while on the leases, then are refused 503 unavailable; never a 500 or a bare failure.
    expect(served(during).length).toBeGreaterThan(0);
    const refused = during.filter((call) => call.status !== 200);
    expect(refused.length).toBeGreaterThan(0);
    const unavailable = (call: { status: number; code: string | null }) => call.status === 503 && call.code === 'unavailable';
    expect(refused.filter((call) => !unavailable(call))).toEqual([]);
    // And once the database is back, calls are served again: all of them once it has been back a
    // while, and (however fast the run goes after it) the last ten.
    expect(after.length).toBeGreaterThanOrEqual(30);
    expect(after.filter((call) => call.status !== 200 && !unavailable(call))).toEqual([]);
    expect(served(recovered)).toEqual(recovered);
    const lastTen = [...after].sort((a, b) => a.sentMs - b.sentMs).slice(-10);
    expect(served(lastTen)).toEqual(lastTen);
    // Money operations fail only while the database is away, 503 unavailable with retry-after.
    const windowEnd = result.mainPhaseStartedAt + outage.endedMs + RECOVERY_MS;
    const failedOperations = result.operations.filter((operation) => operation.code !== null);
    expect(failedOperations.filter((operation) => !unavailable(operation))).toEqual([]);
    expect(databaseFaultFigures(result)).toMatchObject({ internalErrors: 0, unavailableWithoutRetryAfter: 0, unavailableOutsideOutage: 0 });
    // Reconciliation answered ok whenever it answered, and went unanswered only during the outage.
    expect(sampled.samples.every((ok) => ok)).toBe(true);
    expect(sampled.unanswered.length).toBeGreaterThan(0);
    const outageStart = result.mainPhaseStartedAt + outage.beganMs;
    expect(sampled.unanswered.filter((at) => at < outageStart - 1_000 || at > windowEnd)).toEqual([]);

    // The objects book what they held; then every cent, and every call paid upstream.
    expect(await flushWallets(stack)).toMatchObject({ unflushed_calls: 0, in_flight_calls: 0, refused_calls: 0, unreachable: 0 });
    const books = await verifyBooks(stack, stack.databaseUrl, result);
    console.log(formatSummary(result, summarize(result), books));
    console.log(
      `outage: ${before.length} calls before, ${during.length} during (${served(during).length} served on leases), ${after.length} after (${served(after).length} served)`,
    );
    expect(books.problems).toEqual([]);
    expect(books.reconciliationOk).toBe(true);
    expect(books.usageRows).toBe(served(result.calls).length);
    expect(books.userUsageDebitsUsd).toBe(books.ratedRetailUsd);
    expect(books.topUpsCredited).toBe(result.paidCheckouts.length);
    const audit = await runUpstreamAudit(stack.databaseUrl, { settleGraceSeconds: 600 });
    console.log(formatUpstreamAudit(audit));
    expect({ calls: audit.unbilledCalls, tokens: audit.unbilledTokens }).toEqual({ calls: 0, tokens: 0 });
    expect(result.problems).toEqual([]);
  }, 300_000);
});
