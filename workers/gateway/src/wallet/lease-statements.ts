/**
 * The wallet object's context statements (workers/shared/wallet/): the session's context, alone or
 * with the lease. Its flush is `flushLease` (workers/shared/wallet/settle-lease.ts): the object
 * stores its settlements already encoded (bookings as faucet_usage_booking JSON, call records as
 * gateway_calls columns: plain data its storage can keep), so the flush sends them as they are.
 */
import { sql } from 'drizzle-orm';
import { queryOne } from '#shared/query.ts';
import { formatUsd } from '#shared/money/index.ts';
import {
  leaseContext,
  leaseContextCall,
  leaseContextOfRow,
  type LeaseContext,
  type LeaseContextInput,
  type LeaseContextRow,
  type RoutePolicy,
  type StoredFallbackKey,
  type StoredKey,
} from '#shared/wallet/lease-context.ts';
import type { WalletCallRequest } from '#shared/durable-objects.ts';
import { keyBudgetsOf, type KeyBudgets } from '#shared/wallet/settle-lease.ts';
import type { SqlDatabase } from '#shared/query.ts';

/** What the object keeps of a context answer: plain data (amounts as 8-decimal strings). */
export interface CallContext {
  outcome: LeaseContext['outcome'];
  appId: string | null;
  endUserId: string | null;
  featureKey: string | null;
  developerShareBps: number | null;
  developerPricePerMtokUsd: string | null;
  openFeeUsd: string | null;
  maxOutputTokens: number | null;
  aliases: Record<string, string>;
  fallbacks: string[];
  /** Epoch ms. */
  sessionExpiresAt: number | null;
  routePolicy: RoutePolicy | null;
  /** The end user's key of the provider and the developer's (encrypted); the end user's keys of the fallback providers. */
  userKey: StoredKey | null;
  developerKey: StoredKey | null;
  fallbackKeys: Record<string, StoredFallbackKey>;
}

function contextInput(request: WalletCallRequest): LeaseContextInput {
  return {
    tokenHash: request.tokenHash,
    featureKey: request.featureKey ?? undefined,
    provider: request.provider,
    model: request.model,
    routing: { alias: request.alias, fallbacks: request.fallbacks },
  };
}

export async function fetchCallContext(database: SqlDatabase, request: WalletCallRequest): Promise<CallContext> {
  return callContextOf(await leaseContext(database, contextInput(request)));
}

/**
 * The context and, when the call passed its checks and the session's end user is the one the object
 * is named after (`end_users.wallet_object`), the lease renewed to `targetUsd` — one statement, so
 * the first call of a wallet waits on one round trip. The renewal is a flush of nothing
 * (`faucet_settle_lease` with no calls, keep = true). When the call may take the developer's key (it
 * asks for it or for no route) and the developer has one, part of that key's budget is leased too
 * (`budgetUsd`): room taken before the route is known, given back with the lease when unused.
 */
export async function fetchCallContextWithLease(
  database: SqlDatabase,
  request: WalletCallRequest,
  lease: { wallet: string; targetUsd: string; ttlSeconds: number; callSlots: number; budgetUsd: string | null },
): Promise<{
  context: CallContext;
  lease: { leaseUsd: string; leaseExpiresAt: Date; spendLimits: unknown; rateLimit: unknown; keyBudgets: KeyBudgets } | null;
}> {
  const row = await queryOne<
    LeaseContextRow & {
      lease_amount_usd: string | null;
      lease_expires_at: Date | string | null;
      spend_limits: unknown;
      rate_limit: unknown;
      key_budgets: unknown;
    }
  >(
    database,
    // faucet_open_lease takes the lease only for a call that passed its checks, of the end user the
    // object is named after; part of the developer key's budget too when asked (`budgetUsd`).
    sql`select c.*, l.amount_usd as lease_amount_usd, l.expires_at as lease_expires_at, l.spend_limits, l.rate_limit, l.key_budgets
          from ${leaseContextCall(contextInput(request))} c
          left join lateral faucet_open_lease(c.end_user_id, c.outcome, ${lease.wallet}, ${lease.targetUsd}::numeric,
                                              ${lease.ttlSeconds}::integer, ${lease.callSlots}::integer,
                                              case when c.developer_key is not null and ${lease.budgetUsd}::text is not null
                                                   then jsonb_build_object(c.developer_key ->> 'id', ${lease.budgetUsd}::text) end) l on true`,
  );
  return {
    context: callContextOf(leaseContextOfRow(row)),
    lease:
      row.lease_amount_usd === null
        ? null
        : {
            leaseUsd: row.lease_amount_usd,
            leaseExpiresAt: new Date(row.lease_expires_at as string),
            spendLimits: row.spend_limits,
            rateLimit: row.rate_limit,
            keyBudgets: keyBudgetsOf(row.key_budgets),
          },
  };
}

function callContextOf(context: LeaseContext): CallContext {
  const none = {
    appId: null,
    endUserId: null,
    featureKey: null,
    developerShareBps: null,
    developerPricePerMtokUsd: null,
    openFeeUsd: null,
    maxOutputTokens: null,
    aliases: {},
    fallbacks: [],
    sessionExpiresAt: null,
    routePolicy: null,
    userKey: null,
    developerKey: null,
    fallbackKeys: {},
  };
  if (!('appId' in context)) return { ...none, outcome: context.outcome };
  const routing = { aliases: context.modelAliases ?? {}, fallbacks: context.fallbackModels ?? [] };
  if (context.outcome !== 'leasable') {
    return {
      ...none,
      ...routing,
      outcome: context.outcome,
      appId: context.appId,
      endUserId: context.endUserId,
      featureKey: context.featureKey,
    };
  }
  return {
    outcome: context.outcome,
    appId: context.appId,
    endUserId: context.endUserId,
    featureKey: context.featureKey,
    developerShareBps: context.developerShareBps,
    developerPricePerMtokUsd: context.developerPricePerMtokUsd === null ? null : formatUsd(context.developerPricePerMtokUsd),
    openFeeUsd: context.openFeeUsd === null ? null : formatUsd(context.openFeeUsd),
    maxOutputTokens: context.maxOutputTokens,
    ...routing,
    sessionExpiresAt: context.sessionExpiresAt.getTime(),
    routePolicy: context.routePolicy,
    userKey: context.userKey,
    developerKey: context.developerKey,
    fallbackKeys: context.fallbackKeys ?? {},
  };
}
