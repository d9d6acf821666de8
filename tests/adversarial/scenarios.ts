/**
 * The attacks on the money path, one script each, against a running stack whose platform pool for
 * `openai` is the fake upstream. Each prints what the attacker got and what was billed, and lists
 * what did not hold; the upstream audit after all of them checks every answered upstream call.
 */
import { createHash } from 'node:crypto';
import { checkoutSessionEvent, chargeRefundedEvent, randomStripeId } from '../../scripts/lib/stripe-events.ts';
import { deliverWebhook, startCheckout } from '../load/stack-client.ts';
import { testSecrets } from '../setup/test-secrets.ts';
import { endUserLimitScenarios } from './end-user-limits.ts';
import { fallbackScenarios, type UpstreamLog } from './fallback-scenarios.ts';
import { impersonate } from './impersonation.ts';
import {
  attackChat,
  type AttackTarget,
  type Books,
  type CallResult,
  describeBooking,
  newAttacker,
  reportLocalUsage,
  walletOf,
} from './attacker-kit.ts';

export interface ScenarioContext {
  target: AttackTarget;
  books: Books;
  /** The stack's CALL_MAX_DURATION_SECONDS. */
  maxDurationSeconds: number;
  /** How many calls the fake upstream has accepted so far. */
  upstreamCallCount(): Promise<number>;
  /** The fake upstream's log: calls it accepted (billed) and requests it refused (billed nothing). */
  upstreamLog(): Promise<UpstreamLog>;
}

export interface ScenarioReport {
  name: string;
  attackerGot: string[];
  billed: string[];
  problems: string[];
}

export interface Scenario {
  name: string;
  /** Runs only in the full suite (needs the short call deadline of its stack, or takes long). */
  fullOnly?: boolean;
  run(context: ScenarioContext, report: ScenarioReport): Promise<void>;
}

const model = 'openai:gpt-4o-mini';
const ask = (text: string, extra: Record<string, unknown> = {}) => ({
  model,
  max_tokens: 64,
  messages: [{ role: 'user', content: text }],
  ...extra,
});
const newId = (label: string) => `adv-${label}-${crypto.randomUUID().slice(0, 8)}`;

function check(report: ScenarioReport, condition: boolean, problem: string): void {
  if (!condition) report.problems.push(problem);
}

const got = (result: CallResult) =>
  `HTTP ${result.status}${result.code ? ` ${result.code}` : ''}, ${result.ending}, ${[...result.content].length} characters${result.chargedUsd ? `, told charge ${result.chargedUsd}` : ''}`;

/** Waits (bounded) until the call's booking is written: settlement after a client leaves runs after the response. */
async function bookedEventually(context: ScenarioContext, callId: string | null, withinMs = 15_000) {
  const until = Date.now() + withinMs;
  for (;;) {
    const bookings = await context.books.bookingsOf(callId);
    if (bookings.length > 0 || Date.now() > until) return bookings;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The call was served by the upstream and booked exactly once, with a non-zero charge. */
async function expectBilledOnce(context: ScenarioContext, report: ScenarioReport, label: string, result: CallResult) {
  const bookings = await bookedEventually(context, result.callId);
  report.billed.push(`${label}: ${describeBooking(bookings)}`);
  check(report, result.callId !== null, `${label}: no call id`);
  check(report, bookings.length === 1, `${label}: ${bookings.length} bookings, expected 1`);
  check(
    report,
    bookings.every((booking) => booking.retailUsd !== '0.00000000' && booking.inputTokens > 0),
    `${label}: booked at zero`,
  );
}

const zeroReportThenCall = (stream: boolean): Scenario => ({
  name: `defect 1: a $0 local usage report under the id of a platform ${stream ? 'stream' : 'call'}`,
  async run(context, report) {
    const attacker = await newAttacker(context.target, 'd1', '1.00000000');
    const requestId = newId('d1');
    const local = await reportLocalUsage(context.target, attacker, requestId, { input: 0, output: 0 });
    report.attackerGot.push(`local report ${requestId}: HTTP ${local.status}, charge ${local.chargedUsd}`);
    const result = await attackChat(context.target, attacker, ask('tell me a story'), { requestId, stream, abortAt: 'never' });
    report.attackerGot.push(`platform call under the same id: ${got(result)}`);
    check(report, result.status === 200, 'the platform call was not served');
    await expectBilledOnce(context, report, 'platform call', result);
  },
});

const abortAt = (
  point: 'before_headers' | 'after_role' | 'mid_content' | 'after_last_content',
  prompt: string,
  label: string,
): Scenario => ({
  name: `defect 4: client aborts a stream ${point.replaceAll('_', ' ')}${label}`,
  async run(context, report) {
    const attacker = await newAttacker(context.target, 'd4', '1.00000000');
    const result = await attackChat(context.target, attacker, ask(prompt, { stream_options: { include_usage: true } }), {
      stream: true,
      abortAt: point,
      abortAfterMs: 300,
    });
    report.attackerGot.push(got(result));
    // Before headers the attacker never learns the call id: find the booking through the fake's log instead (the audit does).
    if (point === 'before_headers') {
      report.billed.push('see the audit (the attacker never saw a call id)');
      return;
    }
    await expectBilledOnce(context, report, 'aborted stream', result);
  },
});

export const scenarios: Scenario[] = [
  zeroReportThenCall(false),
  zeroReportThenCall(true),
  {
    name: 'defect 2: a long stream holds its money until it is booked; another call cannot spend it meanwhile',
    fullOnly: true,
    async run(context, report) {
      const attacker = await newAttacker(context.target, 'd2', '0.00020000');
      const everyMs = Math.floor((context.maxDurationSeconds * 1000 * 0.6) / 10);
      const long = attackChat(
        context.target,
        attacker,
        ask(`[fake:chunks=10][fake:every=${everyMs}] go on`, { max_tokens: 200, stream_options: { include_usage: true } }),
        { stream: true },
      );
      await new Promise((resolve) => setTimeout(resolve, everyMs * 3));
      const during = await walletOf(context.target, attacker);
      const rival = await attackChat(context.target, attacker, ask('spend it again', { max_tokens: 200 }));
      const result = await long;
      report.attackerGot.push(
        `long stream: ${got(result)}`,
        `while it ran: held ${during.held_usd}, a second call got HTTP ${rival.status} ${rival.code ?? ''}`,
      );
      check(report, during.held_usd !== '0.00000000', 'nothing was held while the long stream ran');
      check(report, result.ending === 'complete', 'the long stream did not complete');
      await expectBilledOnce(context, report, 'long stream', result);
      if (rival.status === 200) await expectBilledOnce(context, report, 'second call', rival);
    },
  },
  {
    name: 'defect 2: a stream longer than the call deadline is cut there and billed',
    fullOnly: true,
    async run(context, report) {
      const attacker = await newAttacker(context.target, 'd2b', '1.00000000');
      const result = await attackChat(
        context.target,
        attacker,
        ask(`[fake:chunks=1000][fake:every=500] never stop`, { max_tokens: 2000, stream_options: { include_usage: true } }),
        { stream: true },
      );
      report.attackerGot.push(got(result));
      check(report, /upstream_timeout/.test(result.ending), 'the stream was not ended at its deadline');
      await expectBilledOnce(context, report, 'cut stream', result);
    },
  },
  {
    name: 'defect 3: image-heavy prompt (6 high-detail images on gpt-4o-mini)',
    async run(context, report) {
      const attacker = await newAttacker(context.target, 'd3', '1.00000000');
      const image = { type: 'image_url', image_url: { url: 'https://example.com/huge.png', detail: 'high' } };
      const body = {
        model,
        max_tokens: 16,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'describe all [fake:no-usage]' }, ...Array(6).fill(image)] }],
      };
      const result = await attackChat(context.target, attacker, body);
      report.attackerGot.push(got(result));
      check(report, result.status === 200, 'the image call was not served');
      await expectBilledOnce(context, report, 'image call', result);
    },
  },
  {
    name: 'defect 3/4: CJK prompt, emoji answer, no usage from the provider, stream aborted mid-content',
    async run(context, report) {
      const attacker = await newAttacker(context.target, 'd3c', '1.00000000');
      const cjk = '漢字仮名交じり文を大量に送ります'.repeat(120);
      const result = await attackChat(
        context.target,
        attacker,
        ask(`${cjk}[fake:no-usage][fake:text=emoji][fake:chunks=20][fake:every=100]`, { max_tokens: 400 }),
        { stream: true, abortAt: 'mid_content' },
      );
      report.attackerGot.push(got(result));
      await expectBilledOnce(context, report, 'CJK stream', result);
    },
  },
  abortAt('before_headers', '[fake:delay=1500] hello', ''),
  abortAt('after_role', '[fake:every=300][fake:chunks=6] hello', ''),
  abortAt('mid_content', '[fake:every=300][fake:chunks=6][fake:text=cjk] hello', ', CJK output'),
  abortAt('after_last_content', '[fake:every=100][fake:chunks=4][fake:text=emoji] hello', ', emoji output'),
  abortAt('mid_content', '[fake:every=200][fake:chunks=4][fake:open] hello', ', upstream that never sends usage or ends'),
  {
    name: 'defect 5 / field smuggling: price-changing and unknown fields',
    async run(context, report) {
      const attacker = await newAttacker(context.target, 'd5', '1.00000000');
      const before = await context.upstreamCallCount();
      const smuggled: Array<[string, Record<string, unknown>]> = [
        ['service_tier priority', ask('hi', { service_tier: 'priority' })],
        ['store true', ask('hi', { store: true })],
        ['metadata', ask('hi', { metadata: { a: 'b' } })],
        ['unknown top-level field', ask('hi', { x_provider_option: 1 })],
        [
          'unknown field in a message',
          { model, max_tokens: 8, messages: [{ role: 'user', content: 'hi', cache_control: { type: 'ephemeral' } }] },
        ],
        [
          'audio part',
          {
            model,
            max_tokens: 8,
            messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }],
          },
        ],
      ];
      for (const [label, body] of smuggled) {
        const result = await attackChat(context.target, attacker, body);
        report.attackerGot.push(`${label}: HTTP ${result.status} ${result.code ?? ''}`);
        check(report, result.status === 400, `${label}: not refused with 400`);
      }
      const after = await context.upstreamCallCount();
      report.billed.push(`upstream calls made: ${after - before}; balance ${(await walletOf(context.target, attacker)).balance_usd}`);
      check(report, after === before, 'a smuggled request reached the upstream');
    },
  },
  ...endUserLimitScenarios,
  ...fallbackScenarios,
  {
    name: 'defect 6: chargeback after the credit is spent',
    async run(context, report) {
      const attacker = await newAttacker(context.target, 'd6', '0.00000000');
      const started = await startCheckout(context.target, attacker.token, '1.00000000');
      if (started.sessionId === null) {
        report.problems.push(`checkout could not start: HTTP ${started.outcome.status}`);
        return;
      }
      const paymentIntent = randomStripeId('pi');
      const paid = checkoutSessionEvent({ id: started.sessionId, amount_total: started.amountCents, payment_intent: paymentIntent });
      const credited = await deliverWebhook(context.target, testSecrets.STRIPE_WEBHOOK_SECRET, paid);
      const spend = await attackChat(context.target, attacker, ask('spend the top-up'));
      const refund = chargeRefundedEvent({
        id: randomStripeId('ch'),
        payment_intent: paymentIntent,
        amount: started.amountCents,
        amount_refunded: started.amountCents,
      });
      const refunded = await deliverWebhook(context.target, testSecrets.STRIPE_WEBHOOK_SECRET, refund);
      const after = await walletOf(context.target, attacker);
      const next = await attackChat(context.target, attacker, ask('and again'));
      report.attackerGot.push(
        `top-up webhook HTTP ${credited.status}; call ${got(spend)}; refund webhook HTTP ${refunded.status}; next call HTTP ${next.status} ${next.code ?? ''}`,
      );
      report.billed.push(`balance after the chargeback ${after.balance_usd}`);
      check(report, spend.status === 200, 'the spending call was not served');
      await expectBilledOnce(context, report, 'spending call', spend);
      check(report, after.balance_usd.startsWith('-'), 'the chargeback did not take the spent wallet below zero');
      check(report, next.status === 402, 'a wallet below zero was served another platform call');
    },
  },
  {
    name: 'defect 7: same-id retry of a failed call is served once; a retry of a billed call is not charged again',
    async run(context, report) {
      const attacker = await newAttacker(context.target, 'd7', '1.00000000');
      const requestId = newId('d7');
      const body = ask(`[fake:fail-once=${requestId}] hi`);
      const first = await attackChat(context.target, attacker, body, { requestId });
      const retry = await attackChat(context.target, attacker, body, { requestId });
      const again = await attackChat(context.target, attacker, body, { requestId });
      report.attackerGot.push(`first: ${got(first)}`, `retry: ${got(retry)}`, `retry of the billed call: ${got(again)}`);
      check(report, first.status === 502, 'the failing upstream did not yield 502');
      check(report, retry.status === 200, 'the retry of an unbilled call was not served');
      check(
        report,
        again.status === 409 || (again.status === 200 && again.callId === retry.callId),
        'a retry of a billed call was served as a new call',
      );
      check(report, (await context.books.bookingsOf(first.callId)).length === 0, 'the failed call was booked');
      await expectBilledOnce(context, report, 'retry', retry);
      if (again.callId !== null && again.callId !== retry.callId)
        check(report, (await context.books.bookingsOf(again.callId)).length === 0, 'the second retry was booked');
    },
  },
  {
    name: 'defect 8: client leaves a slow non-streaming call at once',
    async run(context, report) {
      const attacker = await newAttacker(context.target, 'd8', '1.00000000');
      const before = await context.upstreamCallCount();
      const result = await attackChat(context.target, attacker, ask('[fake:delay=2000] slow answer'), {
        abortAt: 'before_headers',
        abortAfterMs: 200,
      });
      report.attackerGot.push(got(result));
      // The attacker has no call id: wait for the upstream to have answered, then for the audit to judge it.
      const until = Date.now() + 10_000;
      while ((await context.upstreamCallCount()) === before && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 200));
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      report.billed.push(
        `balance ${(await walletOf(context.target, attacker)).balance_usd} (was 1.00000000); the audit checks the booking`,
      );
      check(
        report,
        (await walletOf(context.target, attacker)).balance_usd !== '1.00000000',
        'the abandoned non-streaming call was not charged',
      );
    },
  },
  {
    name: 'defect 8: a non-streaming call whose upstream outlives the call deadline',
    fullOnly: true,
    async run(context, report) {
      const attacker = await newAttacker(context.target, 'd8b', '1.00000000');
      const result = await attackChat(context.target, attacker, ask(`[fake:delay=${(context.maxDurationSeconds + 2) * 1000}] very slow`));
      report.attackerGot.push(got(result));
      const bookings = await context.books.bookingsOf(result.callId);
      report.billed.push(`${describeBooking(bookings)}; call ${await context.books.callStatus(result.callId)}`);
      check(report, bookings.length === 1, 'the provider accepted the call (and bills its input) but nothing was booked');
    },
  },
  {
    name: "identity: a local usage report naming another user's ref, or a guessed SHA-256 of the user's raw id",
    async run(context, report) {
      const attacker = await newAttacker(context.target, 'ref', '0.00000000');
      const victim = await newAttacker(context.target, 'victim', '0.00000000');
      const forgeries = [
        ["the victim's user_ref", victim.userRef],
        ["a SHA-256 of the attacker's own raw id", createHash('sha256').update(attacker.externalUserId).digest('hex')],
      ] as const;
      for (const [label, userRef] of forgeries) {
        const requestId = newId('ref');
        const result = await reportLocalUsage(context.target, attacker, requestId, { input: 10, output: 10 }, userRef);
        const written = await context.books.localReportsUnder(requestId);
        report.attackerGot.push(`${label}: HTTP ${result.status}${result.code ? ` ${result.code}` : ''}`);
        report.billed.push(`${label}: ${written} usage events`);
        check(report, result.status === 403 && result.code === 'forbidden', `${label}: answered ${result.status}, expected 403 forbidden`);
        check(report, written === 0, `${label}: the refused report wrote ${written} usage events`);
      }
      const own = await reportLocalUsage(context.target, attacker, newId('ref'), { input: 10, output: 10 });
      report.attackerGot.push(`own user_ref: HTTP ${own.status}`);
      check(report, own.status === 200, `a report naming the session's own user_ref answered ${own.status}`);
    },
  },
  {
    name: "identity: mint a session as someone else's user with only the public app id (server and signed apps)",
    async run(context, report) {
      const outcome = await impersonate(context.target);
      for (const attempt of outcome.attempts) {
        report.attackerGot.push(`${attempt.label}: HTTP ${attempt.status}${attempt.code ? ` ${attempt.code}` : ''}`);
        check(report, attempt.status === 401 || attempt.status === 403, `${attempt.label}: answered ${attempt.status}, expected 401/403`);
      }
      report.billed.push(`sessions written by the attempts: ${outcome.sessionsWritten}`);
      check(report, outcome.sessionsWritten === 0, `the refused attempts wrote ${outcome.sessionsWritten} sessions`);
      check(report, outcome.validProofWorks, "the victim's own signed token no longer mints a session");
    },
  },
  {
    name: 'concurrent same-id calls across routes (platform plain and streamed, mock, local report)',
    async run(context, report) {
      const attacker = await newAttacker(context.target, 'race', '1.00000000');
      const requestId = newId('race');
      const slow = ask('[fake:delay=400] race');
      const [local, ...calls] = await Promise.all([
        reportLocalUsage(context.target, attacker, requestId, { input: 0, output: 0 }),
        ...Array.from({ length: 3 }, () => attackChat(context.target, attacker, slow, { requestId })),
        ...Array.from({ length: 2 }, () => attackChat(context.target, attacker, slow, { requestId, stream: true })),
        attackChat(
          context.target,
          attacker,
          { model: 'mock:echo', max_tokens: 8, messages: [{ role: 'user', content: 'race' }] },
          { requestId },
        ),
      ]);
      const served = calls.filter((call) => call.status === 200);
      report.attackerGot.push(`local report HTTP ${local.status}`, ...calls.map((call) => got(call)));
      check(report, served.length === 1, `${served.length} gateway calls served under one request id, expected 1`);
      check(
        report,
        calls.every((call) => call.status === 200 || call.status === 409),
        'a racing call got something other than 200 or 409',
      );
      for (const call of served) await expectBilledOnce(context, report, 'served call', call);
    },
  },
];
