/**
 * The facts a wallet object decides a call with (docs/edge.md): `faucet_lease_context` answers the
 * checks every gateway call passes (session, developer, app, feature, model, routing — one SQL
 * definition of them, faucet_call_context) and, when they pass (`leasable`), the feature's route
 * policy, prices and output cap and the end user's and the developer's keys of the call's provider.
 * It writes nothing and chooses nothing: the route, the hold and every refusal after the checks are
 * `decideCall`'s (workers/shared/authorize/decide-call.ts).
 */
import { type SQL, sql } from 'drizzle-orm';
import { queryOne, type SqlDatabase } from '../query.ts';
import { parseDatabaseAmount, type Usd } from '../money/index.ts';

export interface LeaseContextInput {
  /** SHA-256 (hex) of the session token, as `virtual_sessions.token_hash`. */
  tokenHash: string;
  /** Undefined: the app's default feature. */
  featureKey: string | undefined;
  provider: string;
  model: string;
  /** The alias the call named and the feature's fallbacks the gateway sized its bounds with; null: not checked. */
  routing: { alias: string | null; fallbacks: string[] } | null;
}

/** The refusals of the checks every call passes (faucet_call_context). */
export type LeaseContextRefusal =
  | 'unauthorized'
  | 'developer_suspended'
  | 'unknown_feature'
  | 'no_default_feature'
  | 'app_archived'
  | 'feature_archived'
  | 'model_not_allowed'
  | 'routing_changed';

/** One union member per outcome, so that comparing `outcome` with one string narrows the type. */
type PerOutcome<Outcome extends string, Fields> = Outcome extends unknown ? { outcome: Outcome } & Fields : never;

/** What a wallet object knows of a session whose call passed the checks. */
export interface LeaseContextFields {
  appId: string;
  endUserId: string;
  developerShareBps: number;
  developerPricePerMtokUsd: Usd | null;
  openFeeUsd: Usd | null;
  featureKey: string;
  maxOutputTokens: number | null;
  /** The feature's aliases and fallbacks (when `routing` was given). */
  modelAliases: Record<string, string> | null;
  fallbackModels: string[] | null;
  sessionExpiresAt: Date;
  routePolicy: RoutePolicy;
  /** The end user's active key of the call's provider, and the app developer's (still encrypted). */
  userKey: StoredKey | null;
  developerKey: StoredKey | null;
  /** With `routing`: the end user's key of each other fallback provider (the byok route's fallbacks). */
  fallbackKeys: Record<string, StoredFallbackKey> | null;
}

/** A feature's route policy, a fact of the call (the decision applies it: decideCall). */
export type RoutePolicy = 'platform_first' | 'byok_first';

/** The routes a wallet object authorizes. */
export type LeasedRoute = 'platform' | 'byok' | 'developer_key';

/** A stored provider key as the object keeps it: plain data, still encrypted. */
export interface StoredKey {
  id: string;
  ciphertext: string;
  iv: string;
  keyVersion: number;
  /** The root registered with it (azure, custom); null: the catalog's. */
  baseUrl: string | null;
}

/** A stored key of a fallback provider on the byok route (opened only if that candidate is tried). */
export interface StoredFallbackKey {
  id: string;
  ciphertext: string;
  iv: string;
  key_version: number;
}

export type LeaseContext =
  /** `leasable`: the checks passed; the object decides the call. */
  | PerOutcome<'leasable', LeaseContextFields>
  | PerOutcome<
      Exclude<LeaseContextRefusal, 'unauthorized' | 'developer_suspended'>,
      {
        appId: string;
        endUserId: string;
        featureKey: string | null;
        modelAliases: Record<string, string> | null;
        fallbackModels: string[] | null;
      }
    >
  | PerOutcome<'unauthorized' | 'developer_suspended', unknown>;

interface StoredKeyRow {
  id: string;
  ciphertext: string;
  iv: string;
  key_version: number;
  base_url: string | null;
}

export interface LeaseContextRow {
  outcome: LeaseContext['outcome'];
  app_id: string | null;
  end_user_id: string | null;
  developer_share_bps: number | null;
  developer_price_per_mtok_usd: string | null;
  open_fee_usd: string | null;
  feature_key: string | null;
  max_output_tokens: number | null;
  model_aliases: Record<string, string> | null;
  fallback_models: string[] | null;
  session_expires_at: Date | string | null;
  route_policy: RoutePolicy | null;
  user_key: StoredKeyRow | null;
  developer_key: StoredKeyRow | null;
  fallback_keys: Record<string, StoredFallbackKey> | null;
}

const amount = (value: string | null): Usd | null => (value === null ? null : parseDatabaseAmount(value));

const storedKey = (row: StoredKeyRow | null): StoredKey | null =>
  row === null ? null : { id: row.id, ciphertext: row.ciphertext, iv: row.iv, keyVersion: row.key_version, baseUrl: row.base_url };

/** The call of faucet_lease_context for `input` (a FROM item: the wallet object joins its lease to it). */
export function leaseContextCall(input: LeaseContextInput): SQL {
  return sql`faucet_lease_context(
      ${input.tokenHash}, ${input.featureKey ?? null}::text, ${input.provider}, ${input.model},
      ${input.routing?.alias ?? null}::text, ${input.routing === null ? null : JSON.stringify(input.routing.fallbacks)}::jsonb)`;
}

/** One read-only statement: never claims, records, holds or reserves anything. */
export async function leaseContext(db: SqlDatabase, input: LeaseContextInput): Promise<LeaseContext> {
  return leaseContextOfRow(await queryOne<LeaseContextRow>(db, sql`select * from ${leaseContextCall(input)}`));
}

/** A row of faucet_lease_context as the typed answer. */
export function leaseContextOfRow(row: LeaseContextRow): LeaseContext {
  if (row.outcome === 'unauthorized' || row.outcome === 'developer_suspended') return { outcome: row.outcome };
  const common = {
    appId: row.app_id as string,
    endUserId: row.end_user_id as string,
    modelAliases: row.model_aliases,
    fallbackModels: row.fallback_models,
  };
  if (row.outcome !== 'leasable') return { outcome: row.outcome, ...common, featureKey: row.feature_key };
  return {
    outcome: row.outcome,
    ...common,
    developerShareBps: row.developer_share_bps as number,
    developerPricePerMtokUsd: amount(row.developer_price_per_mtok_usd),
    openFeeUsd: amount(row.open_fee_usd),
    featureKey: row.feature_key as string,
    maxOutputTokens: row.max_output_tokens,
    sessionExpiresAt: new Date(row.session_expires_at as string),
    routePolicy: row.route_policy ?? 'platform_first',
    userKey: storedKey(row.user_key),
    developerKey: storedKey(row.developer_key),
    fallbackKeys: row.fallback_keys,
  };
}
