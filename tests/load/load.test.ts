/**
 * The short bounded form of `npm run load`, against the shared test stack: concurrent plain and
 * streamed calls, webhook top-ups (each redelivered), adjustments and payouts; then every cent is
 * checked against what the clients were told.
 */
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { testSecrets } from '../setup/test-secrets.ts';
import { formatSummary, summarize } from './load-report.ts';
import { runLoad } from './load-run.ts';
import { needlesOf, scanDatabase } from './scan-secrets.ts';
import { formatUpstreamAudit, runUpstreamAudit } from './upstream-audit-report.ts';
import { flushWallets, sampleReconciliation } from './stack-client.ts';
import { verifyBooks } from './verify-books.ts';

const stack = inject('stack');

describe('load (short bounded run)', () => {
  it('serves concurrent calls and money operations with no error, every call charged exactly once, books reconciled', async () => {
    const target = { ...stack, webhookSecret: testSecrets.STRIPE_WEBHOOK_SECRET };
    const sampler = sampleReconciliation(target);
    const result = await runLoad(target, { users: 6, calls: 60, concurrency: 8, moneyActors: 2, maxDurationMs: 20_000 });
    const during = await sampler.stop();
    // The books agree with themselves at every instant sampled, with calls held unflushed by wallet objects.
    expect(during.samples.length).toBeGreaterThan(3);
    expect(during.samples.every((ok) => ok)).toBe(true);
    expect(during.unanswered).toEqual([]);
    // Then every wallet object books what it settled, and every cent is checked.
    expect(await flushWallets(target)).toMatchObject({ unflushed_calls: 0, in_flight_calls: 0, refused_calls: 0, unreachable: 0 });
    const books = await verifyBooks(target, stack.databaseUrl, result);
    console.log(formatSummary(result, summarize(result), books));

    expect(result.calls.length).toBeGreaterThan(0);
    expect(result.operations.filter((operation) => operation.code !== null)).toEqual([]);
    expect(result.problems).toEqual([]);
    expect(books.problems).toEqual([]);
    expect(books.reconciliationOk).toBe(true);
    // The upstream audit from the gateway's call records: every ended paid call has its booking.
    const audit = await runUpstreamAudit(stack.databaseUrl, { settleGraceSeconds: 600 });
    console.log(formatUpstreamAudit(audit));
    expect({ calls: audit.unbilledCalls, tokens: audit.unbilledTokens }).toEqual({ calls: 0, tokens: 0 });
    expect(books.usageRows).toBe(result.calls.length);
    expect(books.userUsageDebitsUsd).toBe(books.ratedRetailUsd);
    expect(books.topUpsCredited).toBe(result.paidCheckouts.length);
    expect(result.paidCheckouts.length).toBeGreaterThanOrEqual(6);
    // No token, raw user id, prompt or secret of the run anywhere in the shared stack's database.
    expect(await scanDatabase(stack.databaseUrl, needlesOf(result, stack.adminToken, testSecrets.STRIPE_WEBHOOK_SECRET))).toEqual([]);
    // …and the scan does see the run's rows (their request ids carry the run id).
    expect((await scanDatabase(stack.databaseUrl, [{ name: 'run id', value: result.runId }])).length).toBeGreaterThan(0);
  }, 90_000);
});
