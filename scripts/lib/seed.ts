/**
 * The demo data (DESIGN §2), idempotent: a developer with an API key, an app, a `chat` feature on the
 * mock model, and an end user whose wallet opens with 10 USD booked as `seed_opening_balance`.
 */
import type pg from 'pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import { hashExternalUserId, sha256Hex } from '#shared/crypto.ts';
import { createApp } from '#shared/apps/create-app.ts';
import { createFeature } from '#shared/apps/create-feature.ts';
import { createDeveloper } from '#shared/developers/create-developer.ts';
import { createDeveloperKey } from '#shared/developers/create-developer-key.ts';

export const demo = {
  developerEmail: 'demo@faucet.local',
  publicAppId: 'app_demo_local',
  featureKey: 'chat',
  model: 'mock:echo',
  externalUserId: 'demo-user',
  openingBalanceUsd: '10.00000000',
} as const;

export interface SeedInput {
  developerKey: string;
  sessionHashSecret: string;
}

export interface SeedResult {
  developerId: string;
  appId: string;
  endUserId: string;
  userWalletId: string;
  developerWalletId: string;
}

const seedActor = { type: 'system', id: null } as const;
const demoDeveloper = {
  name: 'Demo Developer',
  email: demo.developerEmail,
  payoutDetailsRef: null,
  actor: seedActor,
  requestId: null,
};

const systemWallets = [
  { kind: 'platform_revenue', allowNegative: false },
  { kind: 'platform_upstream_payable', allowNegative: false },
  { kind: 'payment_clearing', allowNegative: true },
] as const;

export async function seed(client: pg.Client, input: SeedInput): Promise<SeedResult> {
  const one = async <T extends pg.QueryResultRow>(text: string, values: unknown[]) => {
    const { rows } = await client.query<T>(text, values);
    if (!rows[0]) throw new Error(`seed: no row from ${text.slice(0, 40)}`);
    return rows[0];
  };
  await client.query('begin');
  try {
    for (const wallet of systemWallets) {
      await client.query(
        `insert into wallets (kind, allow_negative) values ($1, $2)
         on conflict (kind) where end_user_id is null and developer_id is null do nothing`,
        [wallet.kind, wallet.allowNegative],
      );
    }
    // Through the API's own service functions: the developer (wallet, first key, audit row), and the
    // printed key again if .dev.vars now holds another one (a key the developer revoked stays revoked).
    const db = drizzle({ client });
    const existing = await client.query<{ id: string; has_key: boolean }>(
      `select d.id, exists (select 1 from developer_keys k where k.developer_id = d.id and k.key_hash = $2) as has_key
         from developers d where d.email = $1`,
      [demo.developerEmail, await sha256Hex(input.developerKey)],
    );
    const found = existing.rows[0];
    const developer = found ? { id: found.id } : (await createDeveloper(db, { ...demoDeveloper, key: input.developerKey })).developer;
    if (found && !found.has_key) {
      await createDeveloperKey(db, {
        developerId: found.id,
        label: 'demo key',
        actor: seedActor,
        requestId: null,
        key: input.developerKey,
      });
    }
    // The demo app and its feature are made by the services the developer endpoints use.
    if ((await client.query('select 1 from apps where public_app_id = $1', [demo.publicAppId])).rowCount === 0) {
      await createApp(db, {
        developerId: developer.id,
        name: 'Demo App',
        publicAppId: demo.publicAppId,
        actor: seedActor,
        requestId: null,
      });
    }
    const app = await one<{ id: string; has_feature: boolean }>(
      `select id, exists (select 1 from app_features f where f.app_id = apps.id and f.feature_key = $2) as has_feature
         from apps where public_app_id = $1`,
      [demo.publicAppId, demo.featureKey],
    );
    if (!app.has_feature) {
      await createFeature(db, {
        developerId: developer.id,
        publicAppId: demo.publicAppId,
        feature: { feature_key: demo.featureKey, name: 'Chat', default_model: demo.model },
        actor: seedActor,
        requestId: null,
      });
    }
    const endUser = await one<{ id: string }>(
      `insert into end_users (app_id, external_user_hash) values ($1, $2)
       on conflict (app_id, external_user_hash) do update set app_id = excluded.app_id returning id`,
      [app.id, await hashExternalUserId(input.sessionHashSecret, demo.externalUserId)],
    );
    const userWallet = await one<{ id: string }>(
      `insert into wallets (kind, end_user_id) values ('user', $1)
       on conflict (end_user_id) do update set kind = excluded.kind returning id`,
      [endUser.id],
    );
    const developerWallet = await one<{ id: string }>(
      `insert into wallets (kind, developer_id) values ('developer', $1)
       on conflict (developer_id) do update set kind = excluded.kind returning id`,
      [developer.id],
    );
    // The opening credit: one balanced transaction, booked once thanks to its idempotency key.
    const opening = await client.query<{ id: string }>(
      `insert into ledger_transactions (kind, idempotency_key, reason)
       values ('seed_opening_balance', $1, 'demo wallet opening balance')
       on conflict (idempotency_key) do nothing returning id`,
      [`seed_opening_balance:${userWallet.id}`],
    );
    const transaction = opening.rows[0];
    if (transaction) {
      await client.query(
        `insert into ledger_entries (transaction_id, wallet_id, amount)
         select $1::uuid, $2::uuid, $3::numeric
         union all select $1::uuid, (select id from wallets where kind = 'payment_clearing' and end_user_id is null and developer_id is null), -$3::numeric`,
        [transaction.id, userWallet.id, demo.openingBalanceUsd],
      );
      await client.query(
        `update wallets set balance = balance + e.amount
         from ledger_entries e where e.transaction_id = $1 and wallets.id = e.wallet_id`,
        [transaction.id],
      );
    }
    await client.query('commit');
    return {
      developerId: developer.id,
      appId: app.id,
      endUserId: endUser.id,
      userWalletId: userWallet.id,
      developerWalletId: developerWallet.id,
    };
  } catch (error) {
    await client.query('rollback');
    throw error;
  }
}
