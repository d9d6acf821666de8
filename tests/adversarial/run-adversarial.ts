/**
 * Runs the attack scenarios against a stack whose `openai` platform pool is the fake upstream,
 * waits for every call to be settled (or swept), then runs the upstream audit and reconciliation.
 * Shared by `npm run test:adversarial` (all scenarios) and the short form in `npm test`.
 */
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { sweepStaleCalls } from '#shared/calls/sweep-stale-calls.ts';
import { flushWallets, reconciliation } from '../load/stack-client.ts';
import { formatUpstreamAudit, runUpstreamAudit, type UpstreamAuditReport } from '../load/upstream-audit-report.ts';
import { Books, type AttackTarget } from './attacker-kit.ts';
import type { UpstreamLog } from './fallback-scenarios.ts';
import { scenarios, type ScenarioReport } from './scenarios.ts';

export interface AdversarialSettings {
  /** CALL_MAX_DURATION_SECONDS of the stack. */
  maxDurationSeconds: number;
  /** CALL_SETTLE_GRACE_SECONDS of the stack. */
  settleGraceSeconds: number;
  /** The fake upstream's `GET /__calls`. */
  fakeCallsUrl: string;
  /** Every scenario, or only those that fit the short form. */
  full: boolean;
  /** Longest wait for calls still in flight before the audit (default: deadline + grace + 5 s). */
  settleWaitMs?: number;
  log(line: string): void;
}

export interface AdversarialResult {
  ok: boolean;
  reports: ScenarioReport[];
  audit: UpstreamAuditReport;
  reconciliationOk: boolean;
}

async function fakeLog(url: string): Promise<UpstreamLog & { in_flight: number }> {
  const response = await fetch(url);
  return (await response.json()) as UpstreamLog & { in_flight: number };
}

/**
 * The scenarios attack the chat completions route only; other tests of a shared stack may call the
 * fake's Messages API meanwhile, so the scenarios count the chat calls alone. The audit reads all.
 */
async function chatLog(url: string): Promise<UpstreamLog> {
  const log = await fakeLog(url);
  return {
    calls: log.calls.filter((call) => call.api === 'chat.completions'),
    refused: log.refused.filter((call) => call.api === 'chat.completions'),
  };
}

export async function runAdversarial(target: AttackTarget, settings: AdversarialSettings): Promise<AdversarialResult> {
  const books = new Books(target.databaseUrl);
  const reports: ScenarioReport[] = [];
  try {
    const context = {
      target,
      books,
      maxDurationSeconds: settings.maxDurationSeconds,
      upstreamCallCount: async () => (await chatLog(settings.fakeCallsUrl)).calls.length,
      upstreamLog: () => chatLog(settings.fakeCallsUrl),
    };
    for (const scenario of scenarios.filter((candidate) => settings.full || !candidate.fullOnly)) {
      const report: ScenarioReport = { name: scenario.name, attackerGot: [], billed: [], problems: [] };
      const started = performance.now();
      try {
        await scenario.run(context, report);
      } catch (error) {
        report.problems.push(`the scenario failed: ${(error as Error).message}`);
      }
      reports.push(report);
      settings.log(
        `${report.problems.length === 0 ? 'ok  ' : 'FAIL'} ${scenario.name} (${((performance.now() - started) / 1000).toFixed(1)} s)`,
      );
      for (const line of report.attackerGot) settings.log(`       attacker got: ${line}`);
      for (const line of report.billed) settings.log(`       billed: ${line}`);
      for (const line of report.problems) settings.log(`       PROBLEM: ${line}`);
    }

    // Every call must end before the audit judges it: the gateway settles (or cuts) each by its
    // deadline; what it could not, the API's cron books after the grace (run here in-process).
    const until = Date.now() + (settings.settleWaitMs ?? (settings.maxDurationSeconds + settings.settleGraceSeconds + 5) * 1000);
    while (Date.now() < until && ((await fakeLog(settings.fakeCallsUrl)).in_flight > 0 || (await books.inFlightCalls()) > 0)) {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const stale = await books.inFlightCalls();
    if (stale > 0 && settings.full) {
      settings.log(`${stale} calls still in flight after their deadline and grace: running the stale-call sweep`);
      const pool = new pg.Pool({ connectionString: target.databaseUrl, max: 1 });
      try {
        const swept = await sweepStaleCalls(drizzle(pool), {
          CALL_MAX_DURATION_SECONDS: String(settings.maxDurationSeconds),
          CALL_SETTLE_GRACE_SECONDS: String(settings.settleGraceSeconds),
        });
        settings.log(`sweep: ${swept.booked} booked at their bound, ${swept.abandoned} abandoned`);
      } finally {
        await pool.end();
      }
    }

    // The wallet objects book what they hold (they would within a second on their own).
    await flushWallets(target);
    // Refused attempts (a fallback's failed first candidate) are part of the provider's log: billed nothing, they need no booking.
    const log = await fakeLog(settings.fakeCallsUrl);
    const reported = [
      ...log.calls.map((call) => ({
        callId: call.callId ?? 'missing-call-id',
        inputTokens: call.inputTokens,
        outputTokens: call.outputTokens,
      })),
      ...log.refused.map((call) => ({ callId: call.callId ?? 'missing-call-id', inputTokens: 0, outputTokens: 0, failed: true })),
    ];
    const audit = await runUpstreamAudit(target.databaseUrl, { settleGraceSeconds: settings.settleGraceSeconds, reported });
    const books_ = await reconciliation(target);
    settings.log(formatUpstreamAudit(audit));
    settings.log(`  of those, refused by the provider (failed attempts, billed nothing): ${log.refused.length}`);
    settings.log(`reconciliation: ${books_.ok ? 'ok' : 'FAILED'}`);
    const ok = audit.ok && books_.ok && reports.every((report) => report.problems.length === 0);
    return { ok, reports, audit, reconciliationOk: books_.ok };
  } finally {
    await books.close();
  }
}
