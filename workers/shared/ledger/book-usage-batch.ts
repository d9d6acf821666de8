/**
 * Book many settled calls in one statement (the flush of a wallet object's settlements).
 * `faucet_book_usage_batch` books each wallet's elements through `faucet_book_usage_locked`, the
 * booking `faucet_book_usage` makes for one call, so a flushed call gets exactly what a per-call
 * booking gets, once per money key. Each element is booked or refused on its own; anything else
 * fails the whole statement and writes nothing, so a flush is retried whole and books each call
 * exactly once (docs/edge.md, "Built").
 */
import { sql } from 'drizzle-orm';
import { toSnapshot } from 'dinero.js/bigint';
import { formatUsd, parseDatabaseAmount, type Usd } from '../money/index.ts';
import type { BookedUsage, BookUsageInput } from './book-usage.ts';
import { queryRows, type SqlDatabase } from '../query.ts';

/** Refusal reasons: the error codes of DESIGN §4 a per-call booking would have failed with. */
export type BookingRefusal = 'insufficient_balance' | 'invalid_request' | 'not_found' | 'conflict';

/** `already_booked`: the money key was booked before (or earlier in this batch); the amounts and balance are that booking's. */
type BookedElement = { outcome: 'booked' | 'already_booked' } & BookedUsage;

export type BookUsageBatchResult = {
  index: number;
  requestId: string;
} & (
  | BookedElement
  | {
      /** Nothing was written for this element. */
      outcome: 'refused';
      reason: BookingRefusal;
      /** What the database or the check said (no amounts of other bookings, no secrets). */
      message: string;
    }
);

/** The most elements one statement takes (the SQL function refuses more). */
export const MAX_BOOKINGS_PER_BATCH = 1000;

/** One element's row as `faucet_book_usage_batch` (and `faucet_settle_lease`) return it. */
export interface BookingRow {
  ordinal: number;
  request_id: string | null;
  outcome: 'booked' | 'already_booked' | 'refused';
  reason: BookingRefusal | null;
  message: string | null;
  usage_event_id: string | null;
  ledger_transaction_id: string | null;
  upstream_cost_usd: string | null;
  retail_usd: string | null;
  developer_revenue_usd: string | null;
  platform_share_usd: string | null;
  balance_usd: string | null;
  receivable_usd: string | null;
  created_at: Date | string | null;
}

const amount = (value: string | null): Usd => parseDatabaseAmount(value ?? '');

/** An amount as the SQL functions take it; a Dinero of another currency is refused, never converted. */
export function usdParameter(value: Usd, field: string): string {
  const { currency } = toSnapshot(value);
  if (currency.code !== 'USD') throw new TypeError(`${field} is in ${String(currency.code)}, not USD`);
  return formatUsd(value);
}

const price = (value: Usd | undefined, field: string): string | null => (value === undefined ? null : usdParameter(value, field));

/** One element of `p_bookings`: the parameters of faucet_book_usage without `p_`. */
export function bookingElement(input: BookUsageInput): Record<string, unknown> {
  const { rated } = input;
  const { prices } = rated;
  return {
    request_id: input.requestId,
    client_request_id: input.clientRequestId ?? null,
    call_id: input.callId ?? null,
    app_id: input.appId,
    end_user_id: input.endUserId,
    feature_key: input.featureKey,
    route_mode: rated.routeMode,
    provider: rated.provider,
    model: rated.model,
    input_tokens: rated.inputTokens,
    output_tokens: rated.outputTokens,
    cached_tokens: rated.cachedInputTokens,
    estimated: rated.estimated,
    upstream_cost: usdParameter(rated.upstreamCostUsd, 'upstreamCostUsd'),
    upstream_payable: usdParameter(rated.upstreamPayableUsd, 'upstreamPayableUsd'),
    retail: usdParameter(rated.retailUsd, 'retailUsd'),
    developer_revenue: usdParameter(rated.developerRevenueUsd, 'developerRevenueUsd'),
    platform_share: usdParameter(rated.platformShareUsd, 'platformShareUsd'),
    provider_credential_id: input.providerCredentialId ?? null,
    metadata: { catalog_version: rated.catalogVersion, ...input.metadata },
    allow_receivable: input.allowReceivable === true,
    price_catalog_version: rated.catalogVersion,
    cache_write_tokens: rated.cacheWriteTokens,
    audio_input_tokens: rated.audioInputTokens,
    audio_output_tokens: rated.audioOutputTokens,
    reasoning_tokens: rated.reasoningTokens,
    input_price: price(prices?.inputPerMillion, 'inputPerMillion'),
    cached_input_price: price(prices?.cachedInputPerMillion, 'cachedInputPerMillion'),
    cache_write_price: price(prices?.cacheWritePerMillion, 'cacheWritePerMillion'),
    audio_input_price: price(prices?.audioInputPerMillion, 'audioInputPerMillion'),
    output_price: price(prices?.outputPerMillion, 'outputPerMillion'),
    reasoning_price: price(prices?.reasoningPerMillion, 'reasoningPerMillion'),
    audio_output_price: price(prices?.audioOutputPerMillion, 'audioOutputPerMillion'),
    cache_write_1h_tokens: rated.cacheWrite1hTokens,
    cache_write_1h_price: price(prices?.cacheWrite1hPerMillion, 'cacheWrite1hPerMillion'),
  };
}

/** The result of the element at `index` from its row. */
export function bookingResult(index: number, requestId: string, row: BookingRow): BookUsageBatchResult {
  if (row.outcome === 'refused') {
    return { index, requestId, outcome: 'refused', reason: row.reason ?? 'invalid_request', message: row.message ?? 'refused' };
  }
  return {
    index,
    requestId,
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

/**
 * The elements to send, each with its position in `bookings`; a booking that cannot be encoded (an
 * amount in another currency) is refused here, in `results`, and not sent.
 */
export function encodeBookings(bookings: readonly BookUsageInput[]): {
  results: Array<BookUsageBatchResult | undefined>;
  sent: Array<{ index: number; element: Record<string, unknown> }>;
} {
  const results: Array<BookUsageBatchResult | undefined> = new Array(bookings.length);
  const sent: Array<{ index: number; element: Record<string, unknown> }> = [];
  bookings.forEach((booking, index) => {
    try {
      sent.push({ index, element: bookingElement(booking) });
    } catch (error) {
      const message = error instanceof Error ? error.message : 'the booking cannot be encoded';
      results[index] = { index, requestId: booking.requestId, outcome: 'refused', reason: 'invalid_request', message };
    }
  });
  return { results, sent };
}

/**
 * Books `bookings` in one statement and returns one result per booking, in the order given. An
 * element that cannot even be encoded (an amount in another currency) is refused here and not
 * sent. Throws (and nothing of the batch is written) only when the statement itself fails: retry
 * the same batch, each call is booked once. More than MAX_BOOKINGS_PER_BATCH: split the flush.
 */
export async function bookUsageBatch(db: SqlDatabase, bookings: readonly BookUsageInput[]): Promise<BookUsageBatchResult[]> {
  if (bookings.length > MAX_BOOKINGS_PER_BATCH) {
    throw new RangeError(`at most ${MAX_BOOKINGS_PER_BATCH} bookings per batch, got ${bookings.length}`);
  }
  const { results, sent } = encodeBookings(bookings);
  if (sent.length > 0) {
    const rows = await queryRows<BookingRow>(
      db,
      sql`select * from faucet_book_usage_batch(${JSON.stringify(sent.map((item) => item.element))}::jsonb)`,
    );
    for (const row of rows) {
      const item = sent[row.ordinal - 1];
      if (item === undefined) throw new Error(`faucet_book_usage_batch returned an unknown ordinal ${row.ordinal}`);
      results[item.index] = bookingResult(item.index, bookings[item.index]!.requestId, row);
    }
  }
  return results.map((entry, index) => {
    if (entry === undefined) throw new Error(`faucet_book_usage_batch returned no row for booking ${index}`);
    return entry;
  });
}
