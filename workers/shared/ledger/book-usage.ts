/**
 * Book one rated model call, once per request id: the usage record (with the catalog version, token
 * parts and per-million prices it was rated with), its balanced ledger transaction and the
 * settlement of the request's hold, in one statement (one round trip, all or nothing).
 */
import { sql } from 'drizzle-orm';
import { formatUsd, parseDatabaseAmount, type Usd } from '../money/index.ts';
import type { RatedUsage } from '../rating/index.ts';
import { queryOne, requireUuid, type SqlDatabase } from '../query.ts';

export interface BookUsageInput {
  /**
   * The call's money key, owned by the server (`call:<uuid>` for a gateway call, `local:…` for a
   * local usage report): the unique key of the booking and of its hold.
   */
  requestId: string;
  /** The client's x-request-id, kept for correlation only. */
  clientRequestId?: string;
  /** The gateway call this booking closes. */
  callId?: string;
  /**
   * Write the booking even when the wallet cannot cover it (a cost the gateway could not bound):
   * the shortfall is recorded as a receivable. Without it such a booking is refused.
   */
  allowReceivable?: boolean;
  appId: string;
  endUserId: string;
  featureKey: string;
  rated: RatedUsage;
  providerCredentialId?: string | null;
  /** Extra facts stored on the ledger transaction (never prompt text or secrets). */
  metadata?: Record<string, unknown>;
}

/** What a booking wrote (or, booked before, what it had written). */
export interface BookedUsage {
  usageEventId: string;
  /** Null when nothing was charged (retail 0): no money moved, so no transaction. */
  ledgerTransactionId: string | null;
  upstreamCostUsd: Usd;
  retailUsd: Usd;
  developerRevenueUsd: Usd;
  platformShareUsd: Usd;
  /** The user's wallet balance right after this booking (booked before: per the caller's result). */
  balanceUsd: Usd;
  /** The part of the retail the wallet could not cover (only with `allowReceivable`). */
  receivableUsd: Usd;
  createdAt: Date;
}

export type BookUsageResult =
  /** `duplicate`: this request id was booked before; the amounts are the first booking's, the balance now. */
  ({ outcome: 'booked' | 'duplicate' } & BookedUsage) | { outcome: 'insufficient_balance'; retailUsd: Usd; balanceUsd: Usd };

interface Row {
  outcome: 'booked' | 'duplicate' | 'insufficient_balance';
  usage_event_id: string | null;
  ledger_transaction_id: string | null;
  upstream_cost_usd: string | null;
  retail_usd: string;
  developer_revenue_usd: string | null;
  platform_share_usd: string | null;
  balance_usd: string;
  receivable_usd: string | null;
  created_at: Date | string | null;
}

const amount = (value: string | null): Usd => parseDatabaseAmount(value ?? '');
const price = (value: Usd | undefined): string | null => (value === undefined ? null : formatUsd(value));

/**
 * Charges `rated.retailUsd` to the end user's wallet if its balance minus the other requests'
 * active holds covers it (the request's own hold is settled, its unused rest released), credits
 * the developer, platform revenue and upstream payable, and records the usage event.
 * A failure anywhere leaves nothing behind.
 */
export async function bookUsage(db: SqlDatabase, input: BookUsageInput): Promise<BookUsageResult> {
  const { rated } = input;
  const { prices } = rated;
  const row = await queryOne<Row>(
    db,
    sql`select * from faucet_book_usage(
      ${input.requestId}, ${input.clientRequestId ?? null}, ${input.callId === undefined ? null : requireUuid(input.callId, 'call')}::uuid,
      ${requireUuid(input.appId, 'app')}::uuid, ${requireUuid(input.endUserId, 'end user')}::uuid,
      ${input.featureKey}, ${rated.routeMode}, ${rated.provider}, ${rated.model},
      ${rated.inputTokens}::integer, ${rated.outputTokens}::integer, ${rated.cachedInputTokens}::integer, ${rated.estimated}::boolean,
      ${formatUsd(rated.upstreamCostUsd)}::numeric, ${formatUsd(rated.upstreamPayableUsd)}::numeric, ${formatUsd(rated.retailUsd)}::numeric,
      ${formatUsd(rated.developerRevenueUsd)}::numeric, ${formatUsd(rated.platformShareUsd)}::numeric,
      ${input.providerCredentialId ?? null}::uuid,
      ${JSON.stringify({ catalog_version: rated.catalogVersion, ...input.metadata })}::jsonb,
      ${input.allowReceivable === true}::boolean, ${rated.catalogVersion},
      ${rated.cacheWriteTokens}::integer, ${rated.audioInputTokens}::integer, ${rated.audioOutputTokens}::integer,
      ${rated.reasoningTokens}::integer, ${price(prices?.inputPerMillion)}::numeric, ${price(prices?.cachedInputPerMillion)}::numeric,
      ${price(prices?.cacheWritePerMillion)}::numeric, ${price(prices?.audioInputPerMillion)}::numeric,
      ${price(prices?.outputPerMillion)}::numeric, ${price(prices?.reasoningPerMillion)}::numeric,
      ${price(prices?.audioOutputPerMillion)}::numeric, ${rated.cacheWrite1hTokens}::integer,
      ${price(prices?.cacheWrite1hPerMillion)}::numeric)`,
  );
  if (row.outcome === 'insufficient_balance') {
    return { outcome: 'insufficient_balance', retailUsd: amount(row.retail_usd), balanceUsd: amount(row.balance_usd) };
  }
  return {
    outcome: row.outcome,
    usageEventId: row.usage_event_id as string,
    ledgerTransactionId: row.ledger_transaction_id,
    upstreamCostUsd: amount(row.upstream_cost_usd),
    retailUsd: amount(row.retail_usd),
    developerRevenueUsd: amount(row.developer_revenue_usd),
    platformShareUsd: amount(row.platform_share_usd),
    balanceUsd: amount(row.balance_usd),
    receivableUsd: amount(row.receivable_usd ?? '0.00000000'),
    createdAt: new Date(row.created_at as string),
  };
}
