/**
 * `npm run test:adversarial`: the attacks an attacker's scripts against a local stack
 * of its own whose `openai` platform pool is a fake upstream that keeps the provider's books, with a
 * short call deadline and drain so long streams and stalls fit in a minute. Ends with the upstream
 * audit (`unbilled upstream calls: 0, unbilled upstream tokens: 0`) and reconciliation; exits 1 when
 * any scenario, the audit or reconciliation fails.
 */
import { startReliabilityStack } from '../tests/load/reliability-stack.ts';
import { startFakeOpenAiUpstream } from '../tests/adversarial/fake-openai-upstream.ts';
import { runAdversarial } from '../tests/adversarial/run-adversarial.ts';

const settings = { maxDurationSeconds: 8, settleGraceSeconds: 2, drainMs: 1500 };

console.log('faucet adversarial: starting a fake OpenAI upstream and a local stack of its own…');
const fake = await startFakeOpenAiUpstream();
const stack = await startReliabilityStack({
  // Not a key: the fake upstream accepts any bearer.
  OPENAI_API_KEY: 'sk-fake-upstream-not-a-real-key',
  OPENAI_BASE_URL: fake.baseUrl,
  UPSTREAM_ALLOW_LOOPBACK: fake.hostPort,
  CALL_MAX_DURATION_SECONDS: String(settings.maxDurationSeconds),
  CALL_SETTLE_GRACE_SECONDS: String(settings.settleGraceSeconds),
  UPSTREAM_DRAIN_MS: String(settings.drainMs),
});
let ok = false;
try {
  const started = performance.now();
  const result = await runAdversarial(stack, {
    ...settings,
    fakeCallsUrl: `http://${fake.hostPort}/__calls`,
    full: true,
    log: (line) => console.log(line),
  });
  const failed = result.reports.filter((report) => report.problems.length > 0).length;
  console.log(
    `faucet adversarial: ${result.reports.length} scenarios, ${failed} failed, in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  ok = result.ok;
  console.log(ok ? 'faucet adversarial: ok' : 'faucet adversarial: FAILED');
} finally {
  await stack.stop();
  await fake.close();
}
process.exit(ok ? 0 : 1);
