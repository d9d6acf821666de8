/**
 * The fallback under attack: a feature of the demo app lists `openai:gpt-4o` as the fallback
 * of `openai:gpt-4o-mini`, and the fake upstream refuses gpt-4o-mini (`[fake:fail-model=…]`), so
 * every call is answered by its second attempt (`<call id>:1`). What must hold, judged against the
 * fake's own log: the failed attempt reached the provider and is never billed; the answering one is
 * booked once, at its own model's prices, with at least the tokens the provider counted; a stream
 * the fallback accepted is never retried when the client leaves; a replay of the request id while
 * the fallback runs gets no second call or booking; and a client cannot steer the attempts with
 * fields of its own. The suite's upstream audit (with the refused attempts in the provider's log)
 * then checks every attempt of every call.
 */
import { callIdOfAttempt } from '#shared/calls/upstream-audit.ts';
import { formatUsd } from '#shared/money/index.ts';
import { currentPriceCatalog, findModelPrice, modelPriceAt } from '#shared/rating/index.ts';
import { testSecrets } from '../setup/test-secrets.ts';
import { type AttackTarget, attackChat, type Booking, type CallResult, describeBooking, newAttacker, walletOf } from './attacker-kit.ts';
import type { AnsweredCall, RefusedCall } from './fake-upstream-kit.ts';
import type { Scenario, ScenarioContext, ScenarioReport } from './scenarios.ts';

/** What `GET /__calls` of the fake upstream answers. */
export interface UpstreamLog {
  calls: AnsweredCall[];
  refused: RefusedCall[];
}

const primary = 'gpt-4o-mini';
const fallback = 'gpt-4o';

function check(report: ScenarioReport, condition: boolean, problem: string): void {
  if (!condition) report.problems.push(problem);
}

/** A new feature of the demo app, created as its developer would: gpt-4o-mini, falling back to gpt-4o. */
async function fallbackFeature(target: AttackTarget): Promise<string> {
  const featureKey = `fallback-adv-${crypto.randomUUID().slice(0, 8)}`;
  const response = await fetch(`${target.apiUrl}/v1/developer/apps/${target.publicAppId}/features`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${testSecrets.DEMO_DEVELOPER_KEY}` },
    body: JSON.stringify({
      feature_key: featureKey,
      name: 'Fallback (adversarial)',
      default_model: `openai:${primary}`,
      fallback_models: [`openai:${fallback}`],
    }),
  });
  if (response.status !== 201) throw new Error(`creating the fallback feature: HTTP ${response.status}`);
  return featureKey;
}

const ask = (featureKey: string, text: string, extra: Record<string, unknown> = {}) => ({
  feature: featureKey,
  model: `openai:${primary}`,
  max_tokens: 64,
  messages: [{ role: 'user', content: text }],
  ...extra,
});

const got = (result: CallResult) =>
  `HTTP ${result.status}${result.code ? ` ${result.code}` : ''}, ${result.ending}${
    result.attempts
      ? `, attempts ${result.attempts.map((attempt) => `${attempt.model} ${attempt.outcome}${attempt.status ? ` ${attempt.status}` : ''}`).join(' → ')}`
      : ''
  }`;

/** Waits (bounded) for the call's booking: a stream the client left is settled after the response. */
async function bookedEventually(context: ScenarioContext, callId: string | null, withinMs = 15_000): Promise<Booking[]> {
  const until = Date.now() + withinMs;
  for (;;) {
    const bookings = await context.books.bookingsOf(callId);
    if (bookings.length > 0 || Date.now() > until) return bookings;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The attempts of one gateway call in the provider's log. */
function attemptsOf(log: UpstreamLog, callId: string) {
  return {
    answered: log.calls.filter((call) => call.callId !== null && callIdOfAttempt(call.callId) === callId),
    refused: log.refused.filter((call) => call.callId !== null && callIdOfAttempt(call.callId) === callId),
  };
}

/** The catalog's per-million input and output prices of `openai:<model>` now, as the booking keeps them. */
function catalogPrices(model: string): { input: string; output: string } {
  const entry = findModelPrice(currentPriceCatalog, 'openai', model);
  if (entry === undefined) throw new Error(`openai:${model} is not in the catalog`);
  const price = modelPriceAt(entry, new Date(), 0n);
  return { input: formatUsd(price.inputPerMillion), output: formatUsd(price.outputPerMillion) };
}

/**
 * The call failed over from gpt-4o-mini (refused with `failedStatus`) to gpt-4o: the refusal reached
 * the provider, unbilled; the one answering attempt `<call id>:1` is booked once at gpt-4o's prices
 * with at least its tokens; nothing else of the call reached the provider.
 */
async function expectBilledOnceAtFallback(
  context: ScenarioContext,
  report: ScenarioReport,
  label: string,
  result: CallResult,
  failedStatus: number,
): Promise<void> {
  if (result.callId === null) {
    report.problems.push(`${label}: no call id`);
    return;
  }
  const bookings = await bookedEventually(context, result.callId);
  const log = attemptsOf(await context.upstreamLog(), result.callId);
  report.billed.push(`${label}: ${describeBooking(bookings)}${bookings[0] ? ` at ${bookings[0].model}` : ''}`);
  check(
    report,
    log.refused.length === 1 && log.refused[0]?.callId === result.callId && log.refused[0]?.model === primary,
    `${label}: the provider did not see exactly one refused ${primary} attempt under the call id (saw ${log.refused.length})`,
  );
  check(
    report,
    log.refused[0]?.status === failedStatus,
    `${label}: the first attempt was refused with ${log.refused[0]?.status}, not ${failedStatus}`,
  );
  check(
    report,
    log.answered.length === 1 && log.answered[0]?.callId === `${result.callId}:1` && log.answered[0]?.model === fallback,
    `${label}: ${log.answered.length} answered attempts (expected one, ${fallback} as <call id>:1)`,
  );
  check(report, bookings.length === 1, `${label}: ${bookings.length} bookings, expected 1`);
  const booking = bookings[0];
  const answered = log.answered[0];
  if (booking === undefined || answered === undefined) return;
  const prices = catalogPrices(fallback);
  check(report, booking.model === fallback, `${label}: booked at ${booking.model}, not at the answering ${fallback}`);
  check(
    report,
    booking.inputPricePerMtokUsd === prices.input && booking.outputPricePerMtokUsd === prices.output,
    `${label}: rated at ${booking.inputPricePerMtokUsd} / ${booking.outputPricePerMtokUsd} per million, not ${fallback}'s ${prices.input} / ${prices.output}`,
  );
  check(
    report,
    booking.inputTokens >= answered.inputTokens && booking.outputTokens >= answered.outputTokens,
    `${label}: booked ${booking.inputTokens} + ${booking.outputTokens} tokens, the provider counted ${answered.inputTokens} + ${answered.outputTokens}`,
  );
  check(report, booking.retailUsd !== '0.00000000', `${label}: booked at zero`);
}

const failsOver = (failedStatus: 500 | 429): Scenario => ({
  name: `fallback: the first model answers ${failedStatus}, the fallback answers; billed once, at the answering model`,
  async run(context, report) {
    const featureKey = await fallbackFeature(context.target);
    const attacker = await newAttacker(context.target, `fb${failedStatus}`, '1.00000000');
    const result = await attackChat(context.target, attacker, ask(featureKey, `[fake:fail-model=${primary}@${failedStatus}] hello`));
    report.attackerGot.push(got(result));
    check(report, result.status === 200, `the call was not served (HTTP ${result.status})`);
    const listed = result.attempts?.map((attempt) => `${attempt.model}:${attempt.outcome}:${attempt.status ?? ''}`) ?? [];
    check(
      report,
      JSON.stringify(listed) === JSON.stringify([`${primary}:error:${failedStatus}`, `${fallback}:ok:`]),
      `faucet.attempts is ${JSON.stringify(listed)}`,
    );
    await expectBilledOnceAtFallback(context, report, 'fallback call', result, failedStatus);
  },
});

export const fallbackScenarios: Scenario[] = [
  failsOver(500),
  failsOver(429),
  {
    name: 'fallback: the client aborts the stream mid-content after the fallback accepted it; billed, never retried',
    async run(context, report) {
      const featureKey = await fallbackFeature(context.target);
      const attacker = await newAttacker(context.target, 'fbabort', '1.00000000');
      const result = await attackChat(
        context.target,
        attacker,
        ask(featureKey, `[fake:fail-model=${primary}@503][fake:every=300][fake:chunks=8] hello`, {
          stream_options: { include_usage: true },
        }),
        { stream: true, abortAt: 'mid_content' },
      );
      report.attackerGot.push(got(result));
      check(report, result.ending === 'aborted mid-content', `the stream was not cut mid-content (${result.ending})`);
      await expectBilledOnceAtFallback(context, report, 'aborted stream', result, 503);
      // Give a retry every chance to happen: nothing more of this call may reach the provider.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      if (result.callId !== null) {
        const later = attemptsOf(await context.upstreamLog(), result.callId);
        check(
          report,
          later.answered.length === 1 && later.refused.length === 1,
          `after the abort the provider saw ${later.answered.length} answered and ${later.refused.length} refused attempts of the call`,
        );
        // The gateway drains a stream its client left for the usage (UPSTREAM_DRAIN_MS): the attempt may have completed upstream.
        report.billed.push(
          `the fallback attempt upstream: ${later.answered[0]?.ending ?? 'missing'}, ${later.answered[0]?.outputTokens ?? 0} output tokens`,
        );
      }
    },
  },
  {
    name: 'fallback: the client replays its x-request-id while the fallback is in flight; one call upstream, one booking',
    async run(context, report) {
      const featureKey = await fallbackFeature(context.target);
      const attacker = await newAttacker(context.target, 'fbreplay', '1.00000000');
      const requestId = `adv-fbreplay-${crypto.randomUUID().slice(0, 8)}`;
      const body = ask(featureKey, `[fake:fail-model=${primary}@500][fake:delay=2000] replay me`);
      const before = await context.upstreamLog();
      const first = attackChat(context.target, attacker, body, { requestId });
      // Replay once the first attempt was refused, i.e. while the fallback is generating.
      const until = Date.now() + 10_000;
      while ((await context.upstreamLog()).refused.length === before.refused.length && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const replays = await Promise.all([
        attackChat(context.target, attacker, body, { requestId }),
        attackChat(context.target, attacker, body, { requestId, stream: true }),
      ]);
      const original = await first;
      const after = await context.upstreamLog();
      report.attackerGot.push(`first: ${got(original)}`, ...replays.map((replay) => `replay: ${got(replay)}`));
      check(report, original.status === 200, `the original call was not served (HTTP ${original.status})`);
      for (const replay of replays) {
        check(
          report,
          replay.status === 409 || (replay.status === 200 && replay.callId === original.callId),
          `a replay during the fallback was served as a new call (HTTP ${replay.status})`,
        );
        if (replay.callId !== null && replay.callId !== original.callId)
          check(report, (await context.books.bookingsOf(replay.callId)).length === 0, 'a replay was booked');
      }
      check(
        report,
        after.calls.length - before.calls.length === 1,
        `${after.calls.length - before.calls.length} upstream calls answered during the scenario, expected 1`,
      );
      await expectBilledOnceAtFallback(context, report, 'original call', original, 500);
    },
  },
  {
    name: 'fallback: smuggled faucet.attempts / fallback_models / route fields are refused before any upstream call',
    async run(context, report) {
      const featureKey = await fallbackFeature(context.target);
      const attacker = await newAttacker(context.target, 'fbsmuggle', '1.00000000');
      const text = `[fake:fail-model=${primary}@500] smuggle`;
      const smuggled: Array<[string, Record<string, unknown>]> = [
        ['faucet.attempts', ask(featureKey, text, { faucet: { attempts: [{ model: primary, provider: 'openai', outcome: 'ok' }] } })],
        ['fallback_models (none, to make the call fail unbilled)', ask(featureKey, text, { fallback_models: [] })],
        ['fallback_models (a cheaper model)', ask(featureKey, text, { fallback_models: ['mock:echo'] })],
        ['route', ask(featureKey, text, { route: { provider: 'mock', model: 'echo' } })],
        ['attempts', ask(featureKey, text, { attempts: [{ model: 'mock:echo' }] })],
        ['model_aliases', ask(featureKey, text, { model_aliases: { cheap: 'mock:echo' } })],
      ];
      const before = await context.upstreamLog();
      const balanceBefore = (await walletOf(context.target, attacker)).balance_usd;
      for (const [label, body] of smuggled) {
        const result = await attackChat(context.target, attacker, body);
        report.attackerGot.push(`${label}: HTTP ${result.status} ${result.code ?? ''}`);
        check(report, result.status === 400 && result.code === 'invalid_request', `${label}: not refused with 400 invalid_request`);
      }
      const after = await context.upstreamLog();
      const balanceAfter = (await walletOf(context.target, attacker)).balance_usd;
      report.billed.push(
        `upstream requests made: ${after.calls.length - before.calls.length + after.refused.length - before.refused.length}; balance ${balanceAfter}`,
      );
      check(
        report,
        after.calls.length === before.calls.length && after.refused.length === before.refused.length,
        'a smuggled request reached the upstream',
      );
      check(report, balanceAfter === balanceBefore, `the refused requests moved the balance (${balanceBefore} → ${balanceAfter})`);
      // A client's own x-client-request-id (an attempt id of someone else's call) is not what goes upstream.
      const victim = crypto.randomUUID();
      const headered = await attackChat(context.target, attacker, ask(featureKey, text), {
        headers: { 'x-client-request-id': `${victim}:1` },
      });
      report.attackerGot.push(`its own x-client-request-id <another call>:1: ${got(headered)}`);
      const log = await context.upstreamLog();
      check(
        report,
        !log.calls.some((call) => call.callId !== null && callIdOfAttempt(call.callId) === victim) &&
          !log.refused.some((call) => call.callId !== null && callIdOfAttempt(call.callId) === victim),
        "the client's x-client-request-id reached the upstream",
      );
      if (headered.status === 200) await expectBilledOnceAtFallback(context, report, 'call with its own attempt id', headered, 500);
      else report.problems.push(`the call with a client x-client-request-id was not served (HTTP ${headered.status})`);
    },
  },
];
