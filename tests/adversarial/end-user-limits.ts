/**
 * The per-end-user limits under attack: one end user of an app with a daily spend cap, or a
 * requests-per-minute limit, fires 20 platform calls at once. The gateway must serve no more than
 * fits (spend: booked + held ≤ the cap; rate: exactly the limit) and refuse the rest before the
 * upstream. The suite's upstream audit then checks every call that did reach the upstream is booked.
 */
import pg from 'pg';
import { type AttackTarget, attackChat, newAttacker } from './attacker-kit.ts';
import type { Scenario, ScenarioReport } from './scenarios.ts';

/** A second app of the demo developer (same feature key) with the given limits, set as the developer would. */
async function limitedApp(target: AttackTarget, limits: { spendPerDayUsd?: string; requestsPerMinute?: number }): Promise<AttackTarget> {
  const publicAppId = `app_limits_adv_${crypto.randomUUID().slice(0, 8)}`;
  const client = new pg.Client({ connectionString: target.databaseUrl });
  await client.connect();
  try {
    await client.query(
      `with app as (
         insert into apps (developer_id, public_app_id, name, default_feature_key, limit_spend_per_day_usd, limit_requests_per_minute)
         select developer_id, $2, 'Limited (adversarial)', $3, $4, $5 from apps where public_app_id = $1 returning id)
       insert into app_features (app_id, feature_key, name, default_model) select id, $3, 'Chat', 'mock:echo' from app`,
      [target.publicAppId, publicAppId, target.featureKey, limits.spendPerDayUsd ?? null, limits.requestsPerMinute ?? null],
    );
  } finally {
    await client.end();
  }
  return { ...target, publicAppId };
}

/** What the attacker's end user has booked (retail) and still holds, from the books. */
async function bookedAndHeld(target: AttackTarget, walletId: string) {
  const client = new pg.Client({ connectionString: target.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ booked: string; held: string; over: boolean }>(
      `select b.booked::text, h.held::text, (b.booked + h.held) > a.limit_spend_per_day_usd as over
         from wallets w join end_users u on u.id = w.end_user_id join apps a on a.id = u.app_id,
         lateral (select coalesce(sum(retail_usd), 0)::numeric(20, 8) as booked from usage_events where end_user_id = u.id) b,
         lateral (select coalesce(sum(amount), 0)::numeric(20, 8) as held from balance_holds where wallet_id = w.id and status = 'active') h
        where w.id = $1`,
      [walletId],
    );
    return rows[0]!;
  } finally {
    await client.end();
  }
}

function check(report: ScenarioReport, condition: boolean, problem: string): void {
  if (!condition) report.problems.push(problem);
}

const racing = (text: string) => ({ model: 'openai:gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: text }] });

export const endUserLimitScenarios: Scenario[] = [
  {
    name: 'limits: 20 concurrent calls of one end user against a daily spend cap of a few calls',
    async run(context, report) {
      // gpt-4o-mini at 64 output tokens: each call's worst case is ~0.00005 USD, so a few fit.
      const cap = '0.00020000';
      const target = await limitedApp(context.target, { spendPerDayUsd: cap });
      const attacker = await newAttacker(target, 'cap', '1.00000000');
      const before = await context.upstreamCallCount();
      const calls = await Promise.all(
        Array.from({ length: 20 }, () => attackChat(target, attacker, racing('[fake:delay=300] race the cap'))),
      );
      const served = calls.filter((call) => call.status === 200);
      const refused = calls.filter((call) => call.status === 402 && call.code === 'budget_exceeded');
      const reached = (await context.upstreamCallCount()) - before;
      const books = await bookedAndHeld(target, attacker.walletId);
      report.attackerGot.push(`${served.length} served, ${refused.length} refused with 402 budget_exceeded (cap ${cap} USD a day)`);
      report.billed.push(`booked ${books.booked} USD, still held ${books.held} USD; upstream calls ${reached}`);
      check(report, served.length + refused.length === 20, 'a racing call got something other than 200 or 402 budget_exceeded');
      check(report, served.length > 0 && refused.length > 0, 'the race did not meet the cap (nothing served or nothing refused)');
      check(report, !books.over, `booked + held (${books.booked} + ${books.held}) exceeds the daily cap ${cap}`);
      check(
        report,
        reached === served.length,
        `${reached} upstream calls for ${served.length} served calls: a refused call reached the upstream`,
      );
    },
  },
  {
    name: 'limits: 20 concurrent calls of one end user against 5 requests per minute',
    async run(context, report) {
      const target = await limitedApp(context.target, { requestsPerMinute: 5 });
      const attacker = await newAttacker(target, 'rpm', '1.00000000');
      const before = await context.upstreamCallCount();
      const calls = await Promise.all(
        Array.from({ length: 20 }, () => attackChat(target, attacker, racing('[fake:delay=200] race the rate'))),
      );
      const served = calls.filter((call) => call.status === 200);
      const limited = calls.filter((call) => call.status === 429 && call.code === 'rate_limited');
      const reached = (await context.upstreamCallCount()) - before;
      report.attackerGot.push(
        `${served.length} served, ${limited.length} refused with 429 rate_limited (retry-after ${[...new Set(limited.map((call) => call.retryAfter))].join(', ')})`,
      );
      report.billed.push(`upstream calls ${reached}`);
      check(report, served.length === 5, `${served.length} calls served, expected exactly 5`);
      check(report, limited.length === 15, `${limited.length} calls refused with 429 rate_limited, expected 15`);
      check(
        report,
        limited.every((call) => Number(call.retryAfter) >= 1 && Number(call.retryAfter) <= 60),
        'a 429 without a retry-after of 1–60 s',
      );
      check(report, reached === served.length, `${reached} upstream calls for ${served.length} served calls`);
    },
  },
];
