/**
 * The short form of `npm run test:adversarial` in `npm test`: every attack that fits the shared
 * stack's default call deadline, as an attacker's script against the running stack, then the
 * upstream audit against the fake upstream's own books and reconciliation. (The long-stream and
 * deadline attacks need the short deadline of the full suite's own stack.)
 */
import { inject, it, expect } from 'vitest';
import { runAdversarial } from './run-adversarial.ts';

it('no attack gets an upstream call unbilled or under-billed, and the books still reconcile', async () => {
  const stack = inject('stack');
  const lines: string[] = [];
  const result = await runAdversarial(stack, {
    maxDurationSeconds: 900,
    settleGraceSeconds: 600,
    fakeCallsUrl: stack.fakeUpstreamCallsUrl,
    full: false,
    settleWaitMs: 15_000,
    log: (line) => lines.push(line),
  });
  const failed = result.reports
    .filter((report) => report.problems.length > 0)
    .map((report) => `${report.name}: ${report.problems.join('; ')}`);
  expect(failed, lines.join('\n')).toEqual([]);
  expect({ calls: result.audit.unbilledCalls, tokens: result.audit.unbilledTokens }, lines.join('\n')).toEqual({ calls: 0, tokens: 0 });
  expect(result.reconciliationOk).toBe(true);
}, 120_000);
