/**
 * `npm run load`: a bounded load run (loopback only; stops by itself) against a local stack it starts
 * for the purpose (state under `.faucet/tmp/`, removed afterwards), then the books checked against
 * what the clients saw. Exits 1 when anything does not add up.
 *
 *   npm run load -- --users 40 --calls 2000 --concurrency 24 --money-actors 3 --seconds 120
 *   npm run load -- --drop-connections 5     # also cut every database connection 5 times mid-run
 *   npm run load -- --outage-seconds 60      # also stop PostgreSQL for a minute, a third of the way in
 */
import { parseArgs } from 'node:util';
import { databaseFaultFigures, formatSummary, summarize } from '../tests/load/load-report.ts';
import { runLoad } from '../tests/load/load-run.ts';
import { flushWallets } from '../tests/load/stack-client.ts';
import { findLeaks, needlesOf, scanDatabase } from '../tests/load/scan-secrets.ts';
import { startReliabilityStack } from '../tests/load/reliability-stack.ts';
import { formatUpstreamAudit, runUpstreamAudit } from '../tests/load/upstream-audit-report.ts';
import { verifyBooks } from '../tests/load/verify-books.ts';

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '40' },
    calls: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '24' },
    'money-actors': { type: 'string', default: '3' },
    seconds: { type: 'string', default: '120' },
    'drop-connections': { type: 'string', default: '0' },
    'outage-seconds': { type: 'string', default: '0' },
  },
});
const wholeNumber = (name: string, text: string | undefined, min: number, max: number) => {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    console.error(`--${name} must be a whole number from ${min} to ${max}`);
    process.exit(2);
  }
  return value;
};
const positive = (name: string, text: string | undefined, max: number) => wholeNumber(name, text, 1, max);
const plan = {
  users: positive('users', values.users, 1000),
  calls: positive('calls', values.calls, 100_000),
  concurrency: positive('concurrency', values.concurrency, 256),
  moneyActors: positive('money-actors', values['money-actors'], 32),
  maxDurationMs: positive('seconds', values.seconds, 3600) * 1000,
};

// The workers' dev-server output (access lines, warnings, errors) is kept for the secret scan, not printed.
const workerLogs: string[] = [];
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
  if (/^\[(api|gateway|metrics)\] /.test(text)) {
    workerLogs.push(...text.split('\n'));
    return true;
  }
  return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
}) as typeof process.stdout.write;

console.log('faucet load: starting a local stack of its own…');
const stackStarted = performance.now();
const stack = await startReliabilityStack({ LOG_LEVEL: 'info' }, { verbose: true });
let failed = true;
try {
  console.log(`faucet load: stack up in ${((performance.now() - stackStarted) / 1000).toFixed(1)} s; running…`);
  const target = { ...stack, webhookSecret: stack.webhookSecret };
  const drops = wholeNumber('drop-connections', values['drop-connections'], 0, 100);
  const outageMs = wholeNumber('outage-seconds', values['outage-seconds'], 0, 600) * 1000;
  const result = await runLoad(target, {
    ...plan,
    ...(drops > 0 ? { faults: { count: drops, inject: () => stack.proxy.dropConnections() } } : {}),
    ...(outageMs > 0
      ? {
          outage: {
            atCall: Math.floor(plan.calls / 3),
            durationMs: outageMs,
            begin: () => stack.postgres.stop(),
            end: () => stack.postgres.start(),
          },
        }
      : {}),
  });
  // With the database away, 503 `unavailable` (with retry-after) is the expected answer to what needed it; a 500 is a failure.
  const database = databaseFaultFigures(result);
  if (result.outage && database.outageCalls) {
    const { beganMs, endedMs } = result.outage;
    const calls = database.outageCalls;
    console.log(
      `faucet load: PostgreSQL stopped at ${(beganMs / 1000).toFixed(1)} s for ${((endedMs - beganMs) / 1000).toFixed(1)} s; ${calls.total} calls meanwhile: ` +
        `${calls.served} served on leases, ${calls.unavailable} answered 503 unavailable, ${calls.internalErrors} answered 500`,
    );
  }
  // The wallet objects book what they hold (they would within a second on their own).
  const held = await flushWallets(target);
  if (held.unflushed_calls > 0) console.log(`faucet load: ${held.unflushed_calls} calls still unflushed after the flush`);
  if (held.refused_calls > 0)
    console.log(
      `faucet load: ${held.refused_calls} settlements refused by the ledger (kept in their objects; the sweeper books their calls at their bound)`,
    );
  const books = await verifyBooks(target, stack.databaseUrl, result);
  console.log(formatSummary(result, summarize(result), books));
  // The ledger agrees with what was paid upstream: every paid call the gateway made has its booking
  // (mock:echo has no provider log, so the gateway's own call records are the source).
  const upstreamAudit = await runUpstreamAudit(stack.databaseUrl, { settleGraceSeconds: 600 });
  console.log(formatUpstreamAudit(upstreamAudit));
  console.log(`reconciliation: ${books.reconciliationOk ? 'ok' : 'FAILED'}`);
  const needles = needlesOf(result, stack.adminToken, stack.webhookSecret);
  const leaks = [...findLeaks('worker log', workerLogs, needles), ...(await scanDatabase(stack.databaseUrl, needles))];
  const requestLines = workerLogs.filter((line) => line.includes('[wrangler:info]')).length;
  console.log(
    `secret scan: ${workerLogs.length} lines of worker output (${requestLines} access lines) and every database column: ${leaks.length} leaks`,
  );
  for (const leak of leaks.slice(0, 20)) console.log(`LEAK ${leak}`);
  // Without injected faults nothing may fail server-side: a 5xx, a bare error or a dropped connection fails the run.
  const serverFailures = result.operations.filter(
    (operation) => operation.status >= 500 || operation.code === 'no_envelope' || operation.code === 'stream_incomplete',
  ).length;
  const faults = drops > 0 || outageMs > 0;
  if (!faults && serverFailures > 0) console.log(`faucet load: ${serverFailures} server-side failures without any injected fault`);
  // With them, every request the database's absence refused says so: 503 unavailable with retry-after
  // (during the outage, for an outage), never a 500.
  const faultFailures = database.internalErrors + database.unavailableWithoutRetryAfter + database.unavailableOutsideOutage;
  if (faults) {
    console.log(
      `faucet load: answers to the database's absence: ${database.unavailable} × 503 unavailable (expected; ${database.unavailableWithoutRetryAfter} without retry-after, ` +
        `${database.unavailableOutsideOutage} outside the outage), ${database.internalErrors} × 500 (failures)`,
    );
  }
  failed =
    leaks.length > 0 ||
    requestLines === 0 ||
    !books.reconciliationOk ||
    !upstreamAudit.ok ||
    books.problems.length > 0 ||
    result.problems.length > 0 ||
    (!faults && serverFailures > 0) ||
    (faults && faultFailures > 0);
  console.log(failed ? 'faucet load: FAILED' : 'faucet load: ok');
} finally {
  await stack.stop();
}
process.exit(failed ? 1 : 0);
