/**
 * May the calls of this session be authorized by the end user's wallet object against its lease
 * (docs/edge.md)? `faucet_lease_context` answers with the checks of the per-call
 * authorization (session, developer, app, feature, model, routing — one SQL definition of them,
 * faucet_call_context) and its route choice, writing nothing: `leasable` when the call would take
 * the platform route, the byok route with the end user's key or the developer_key route with the
 * developer's key (the app's per-end-user limits cap the lease; the wallet object leases part of the
 * key's monthly budget), `database` when the per-call path (faucet_authorize_call) must decide, or
 * the per-call path's refusal.
 */
import { type SQL, sql } from 'drizzle-orm';
import { queryOne, type SqlDatabase } from '../query.ts';
import { formatUsd, parseDatabaseAmount, type Usd } from '../money/index.ts';
import type { CloudRouteMode } from '../wire/route-modes.ts';

export interface LeaseContextInput {
  /** SHA-256 (hex) of the session token, as `virtual_sessions.token_hash`. */
  tokenHash: string;
  /** Undefined: the app's default feature. */
  featureKey: string | undefined;
  provider: string;
  model: string;
  requestedRoute: CloudRouteMode | undefined;
  /** Worst-case retail on the platform route; null when the model has no catalog price. */
  platformHold: Usd | null;
  /** Worst-case upstream cost at catalog price (the developer key's budget); null when unpriced. */
  catalogCost?: Usd | null;
  poolAvailable: boolean;
  /** The alias the call named and the feature's fallbacks the gateway sized its bounds with; null: not checked. */
  routing: { alias: string | null; fallbacks: string[] } | null;
}

/** The refusals of the per-call authorization's steps 1–2 (faucet_authorize_call), with the same strings. */
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

/** What the per-call path, and the object, know of a session whose call may go ahead. */
export interface LeaseContextFields {
  appId: string;
  endUserId: string;
  /** Null until the end user's wallet exists (the per-call path creates it on first use). */
  walletId: string | null;
  developerShareBps: number;
  developerPricePerMtokUsd: Usd | null;
  openFeeUsd: Usd | null;
  featureKey: string;
  maxOutputTokens: number | null;
  /** The feature's aliases and fallbacks (when `routing` was given). */
  modelAliases: Record<string, string> | null;
  fallbackModels: string[] | null;
  sessionExpiresAt: Date;
  /** On `leasable`: the route; null on `database`. */
  routeMode: LeasedRoute | null;
  /**
   * On the byok route the end user's key of the call's provider, on the developer_key route the
   * developer's (still encrypted), with its registered root.
   */
  routeKey: StoredKey | null;
  /** On the byok route (routing given): the end user's key of each other fallback provider. */
  fallbackKeys: Record<string, { id: string; ciphertext: string; iv: string; key_version: number }> | null;
}

/** The routes a wallet object authorizes on its lease. */
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

export type LeaseContext =
  /** `leasable`: the wallet object may authorize it; `database`: take the per-call path. */
  | PerOutcome<'leasable' | 'database', LeaseContextFields>
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

export interface LeaseContextRow {
  outcome: LeaseContext['outcome'];
  app_id: string | null;
  end_user_id: string | null;
  wallet_id: string | null;
  developer_share_bps: number | null;
  developer_price_per_mtok_usd: string | null;
  open_fee_usd: string | null;
  feature_key: string | null;
  max_output_tokens: number | null;
  model_aliases: Record<string, string> | null;
  fallback_models: string[] | null;
  session_expires_at: Date | string | null;
  route_mode: LeasedRoute | null;
  credential_id: string | null;
  ciphertext: string | null;
  iv: string | null;
  key_version: number | null;
  base_url: string | null;
  fallback_keys: Record<string, { id: string; ciphertext: string; iv: string; key_version: number }> | null;
}

const amount = (value: string | null): Usd | null => (value === null ? null : parseDatabaseAmount(value));

/** The call of faucet_lease_context for `input` (a FROM item: the wallet object joins its lease to it). */
export function leaseContextCall(input: LeaseContextInput): SQL {
  return sql`faucet_lease_context(
      ${input.tokenHash}, ${input.featureKey ?? null}::text, ${input.provider}, ${input.model},
      ${input.requestedRoute ?? null}::text, ${input.platformHold === null ? null : formatUsd(input.platformHold)}::numeric,
      ${input.poolAvailable}::boolean, ${input.routing?.alias ?? null}::text,
      ${input.routing === null ? null : JSON.stringify(input.routing.fallbacks)}::jsonb,
      ${input.catalogCost ? formatUsd(input.catalogCost) : null}::numeric)`;
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
  if (row.outcome !== 'leasable' && row.outcome !== 'database') {
    return { outcome: row.outcome, ...common, featureKey: row.feature_key };
  }
  return {
    outcome: row.outcome,
    ...common,
    walletId: row.wallet_id,
    developerShareBps: row.developer_share_bps as number,
    developerPricePerMtokUsd: amount(row.developer_price_per_mtok_usd),
    openFeeUsd: amount(row.open_fee_usd),
    featureKey: row.feature_key as string,
    maxOutputTokens: row.max_output_tokens,
    sessionExpiresAt: new Date(row.session_expires_at as string),
    routeMode: row.route_mode,
    routeKey:
      row.credential_id === null
        ? null
        : {
            id: row.credential_id,
            ciphertext: row.ciphertext as string,
            iv: row.iv as string,
            keyVersion: row.key_version as number,
            baseUrl: row.base_url,
          },
    fallbackKeys: row.fallback_keys,
  };
}
