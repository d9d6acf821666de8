/**
 * Apps with per-end-user limits for the gateway's limit tests: a developer of its own (so its
 * provider keys and limits touch no other test's app) with one app, its first limits set in SQL
 * (later ones through the API), and funded sessions of new end users of that app.
 */
import { sha256Hex } from '#shared/crypto.ts';
import { createDeveloper } from './provider-keys-kit.ts';
import { api, call, sql, type TestEnv } from './harness.ts';
import { fund } from './ledger-kit.ts';

export interface EndUserLimits {
  spendPerDayUsd?: string | null;
  spendPerMonthUsd?: string | null;
  requestsPerMinute?: number | null;
}

export interface LimitedSession {
  token: string;
  endUserId: string;
  walletId: string;
}

export interface LimitedApp {
  appId: string;
  publicAppId: string;
  developerKey: string;
  /** Changes the limits through the API (PATCH /v1/developer/apps/{public_app_id}). */
  setLimits(limits: EndUserLimits): Promise<void>;
  /** A session of a new end user of the app with `balanceUsd` in their wallet. */
  session(balanceUsd?: string): Promise<LimitedSession>;
}

/** A new developer's app with one feature, `chat` (its default, `mock:echo`), under `limits`. */
export async function limitedApp(testEnv: TestEnv, limits: EndUserLimits = {}): Promise<LimitedApp> {
  const developer = await createDeveloper(testEnv);
  const publicAppId = `app_limits_${crypto.randomUUID().slice(0, 8)}`;
  const [app] = await sql<{ id: string }>(
    testEnv,
    `with app as (insert into apps (developer_id, public_app_id, name, default_feature_key) values ($1, $2, 'Limited', 'chat') returning id),
     feature as (insert into app_features (app_id, feature_key, name, default_model) select id, 'chat', 'Chat', 'mock:echo' from app)
     select id from app`,
    [developer.developerId, publicAppId],
  );
  const appId = app!.id;
  await sql(
    testEnv,
    `update apps set limit_spend_per_day_usd = $2, limit_spend_per_month_usd = $3, limit_requests_per_minute = $4 where id = $1`,
    [appId, limits.spendPerDayUsd ?? null, limits.spendPerMonthUsd ?? null, limits.requestsPerMinute ?? null],
  );
  return {
    appId,
    publicAppId,
    developerKey: developer.key,
    async setLimits(next: EndUserLimits) {
      // Through the API, as a developer changes them: the wallet objects of the app's end users give
      // back leases granted under the former limits.
      const response = await call(api(), testEnv, `/v1/developer/apps/${publicAppId}`, {
        method: 'PATCH',
        json: {
          limits: {
            spend_per_day_usd: next.spendPerDayUsd ?? null,
            spend_per_month_usd: next.spendPerMonthUsd ?? null,
            requests_per_minute: next.requestsPerMinute ?? null,
          },
        },
        token: developer.key,
      });
      if (response.status !== 200) throw new Error(`limits not set: ${response.status} ${await response.text()}`);
    },
    async session(balanceUsd = '1.00000000') {
      const response = await call(api(), testEnv, '/v1/sessions', {
        json: { public_app_id: publicAppId, external_user_id: `user-${crypto.randomUUID()}` },
        token: developer.key,
      });
      if (response.status !== 201) throw new Error(`session creation failed: ${response.status} ${await response.text()}`);
      const { session_token: token } = (await response.json()) as { session_token: string };
      const [row] = await sql<{ end_user_id: string; wallet_id: string }>(
        testEnv,
        `select s.end_user_id, w.id as wallet_id from virtual_sessions s join wallets w on w.end_user_id = s.end_user_id
          where s.token_hash = $1`,
        [await sha256Hex(token)],
      );
      if (balanceUsd !== '0.00000000') await fund(testEnv, row!.wallet_id, balanceUsd);
      return { token, endUserId: row!.end_user_id, walletId: row!.wallet_id };
    },
  };
}

/** What the end user has been charged (booked retail, any route) and still has held. */
export async function endUserSpend(testEnv: TestEnv, endUserId: string) {
  const [row] = await sql<{ booked: string; held: string; calls: number }>(
    testEnv,
    `select (select coalesce(sum(retail_usd), 0)::numeric(20, 8)::text from usage_events where end_user_id = $1) as booked,
            (select coalesce(sum(h.amount), 0)::numeric(20, 8)::text from balance_holds h join wallets w on w.id = h.wallet_id
              where w.end_user_id = $1 and h.status = 'active') as held,
            (select count(*)::int from usage_events where end_user_id = $1) as calls`,
    [endUserId],
  );
  return row!;
}
