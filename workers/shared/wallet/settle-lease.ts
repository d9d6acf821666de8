/**
 * One statement of a wallet object (docs/edge.md): `faucet_settle_lease` writes the records
 * of the calls it authorized against its lease, books their settlements as the batched flush does
 * (the lease's own money not counted against them), and sets the lease — renewed, kept, recalled or
 * released — from what the wallet has left. Each element is booked or refused on its own; anything
 * else fails the whole statement and writes nothing (the lease unchanged), so the object retries the
 * same flush and each call is booked exactly once.
 */
import { sql } from 'drizzle-orm';
import type { gatewayCalls } from '../../../drizzle/schema.ts';
import type { BookUsageInput } from '../ledger/book-usage.ts';
import {
  bookingResult,
  encodeBookings,
  MAX_BOOKINGS_PER_BATCH,
  type BookingRow,
  type BookUsageBatchResult,
  usdParameter,
} from '../ledger/book-usage-batch.ts';
import { queryOne, requireUuid, type SqlDatabase } from '../query.ts';
import { parseDatabaseAmount, type Usd } from '../money/index.ts';
import type { CallLogRow } from '../calls/call-log.ts';

/** The prefix of every lease key (the SQL function refuses another, so a lease never shares a call's key). */
export const LEASE_KEY_PREFIX = 'lease:';

/** A leased call's record (the columns of `gateway_calls` the flush writes), sent at flush time. */
export interface LeasedCallRecord {
  id: string;
  /** `call:<id>`: the key of the call's booking. */
  moneyKey: string;
  /** The client's x-request-id; kept as `<id>#<call id>` when another call of the end user holds that claim. */
  clientRequestId: string;
  fingerprint: string;
  appId: string;
  endUserId: string;
  featureKey: string;
  /** The routes leased: the platform pool, the end user's key, the developer's key. */
  routeMode: 'platform' | 'byok' | 'developer_key';
  /** On the byok and developer_key routes: the key the call used. */
  providerCredentialId?: string | null;
  provider: string;
  model: string;
  boundInputTokens: number;
  boundOutputTokens: number;
  deadlineAt: Date;
  /** When the object authorized it (the catalog's price period it was rated in). */
  createdAt: Date;
  developerPricePerMtokUsd: Usd | null;
  openFeeUsd: Usd | null;
  developerShareBps: number;
  platformMarkupBps: number | null;
  platformFeeBps: number | null;
  fallbackModels: string[] | null;
  /** The prompt's longest cache-breakpoint lifetime: booked at that write price at its bound (null: none). */
  boundCacheLifetime?: '5m' | '1h' | null;
}

export interface SettleLeaseInput {
  endUserId: string;
  /** `lease:<wallet object name>`: the lease hold's request id. */
  leaseKey: string;
  calls: readonly LeasedCallRecord[];
  /** Each names its call by `callId` and its money key by `requestId`; the object sends `allowReceivable: true`. */
  bookings: readonly BookUsageInput[];
  /** The lease amount the object wants after this flush. */
  target: Usd;
  /**
   * true: the lease never drops below its amount less the retail booked now (the object's
   * reservations made during the flush stay covered); false: a recall — at most what is available.
   */
  keep: boolean;
  ttlSeconds: number;
  /** Under a requests-per-minute limit: the calls the object wants to hold unrecorded (else ignored). */
  callSlots?: number;
  /** The developer keys whose monthly budget the object leases: key id → the amount it wants reserved. */
  budgets?: Record<string, Usd>;
}

export interface LeaseState {
  amount: Usd;
  expiresAt: Date;
  /** `released` after a recall to 0 (keep false). */
  status: 'active' | 'released';
}

export interface SettleLeaseResult {
  /** One per booking, in the order given (as bookUsageBatch returns them). */
  results: BookUsageBatchResult[];
  lease: LeaseState;
  /** The wallet's balance after this flush. */
  balanceUsd: Usd;
  /** Balance − every active unexpired hold, the lease included. */
  availableUsd: Usd;
  /** As faucet_settle_lease answers it: null, or {limit, slots, window}. */
  rateLimit: unknown;
  /** Each developer key's budget lease after this flush (none asked for: empty). */
  keyBudgets: KeyBudgets;
}

/** A developer key's budget lease (faucet_settle_lease's key_budgets): its amount, and when it lapses (epoch ms; null: 0 held). */
export type KeyBudgets = Record<string, { amount: string; expiresAt: number | null }>;

/** key_budgets as the statement answers it (JSON, or null) as `KeyBudgets`. */
export function keyBudgetsOf(value: unknown): KeyBudgets {
  const parsed = typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
  if (parsed === null || parsed === undefined) return {};
  const budgets: KeyBudgets = {};
  for (const [id, entry] of Object.entries(parsed as Record<string, { amount: string; expires_at: number | string | null }>)) {
    budgets[id] = { amount: entry.amount, expiresAt: entry.expires_at === null ? null : Number(entry.expires_at) };
  }
  return budgets;
}

/** The lease as the statement answers it: the SQL type `faucet_lease_state`, its fields as columns. */
interface LeaseStateRow {
  amount_usd: string;
  expires_at: Date | string;
  status: 'active' | 'released';
  /** The wallet's balance after the statement. */
  wallet_balance_usd: string;
  /** Balance − every active unexpired hold, the lease included. */
  available_usd: string;
  /** The app's spend limits and their room (JSON; null when it sets none). */
  spend_limits: unknown;
  /** The requests-per-minute limit, the call slots and the window (JSON; null when none). */
  rate_limit: unknown;
  /** Each developer key's budget lease (JSON; null when none was asked for). */
  key_budgets: unknown;
}

/** faucet_settle_lease's one row: the lease, and each booking's outcome (JSON, as faucet_book_usage_batch's rows). */
interface SettledLeaseRow extends LeaseStateRow {
  results: BookingRow[] | string;
  /** The apps of the flush's request-log rows that export traces (JSON array of ids). */
  traced_apps: string[] | string;
  /** The flush wrote webhook events (faucet_webhook_event marks its transaction): the relay must run. */
  webhook_events: boolean;
}

type CallInsert = typeof gatewayCalls.$inferInsert;
/** The gateway_calls columns a leased call's record writes (status and closed_at are the flush's). */
type WrittenColumn = Exclude<keyof CallInsert, 'status' | 'closedAt'>;
/** As it crosses into SQL as JSON: an instant as its ISO string; amounts are 8-decimal strings already. */
type OnTheWire<T> = T extends Date ? string : T;

/**
 * A leased call's record as the flush writes it and the wallet object keeps it: the `gateway_calls`
 * row, derived from the Drizzle schema — its columns by their Postgres names, nullable ones `| null`.
 * The one shape of a call record on the money path (faucet_settle_lease reads it with
 * jsonb_populate_record).
 */
export type CallRecordColumns = {
  -readonly [K in WrittenColumn as (typeof gatewayCalls)[K]['_']['name']]-?: OnTheWire<Exclude<CallInsert[K], undefined>>;
};

/** A flush in the form the statement takes it: what a wallet object keeps, sent as it is. */
export interface LeaseFlush {
  endUserId: string;
  leaseKey: string;
  /** The calls' records (gateway_calls columns), as faucet_settle_lease takes them. */
  calls: readonly CallRecordColumns[];
  /** faucet_usage_booking as JSON, one per booking. */
  bookings: readonly Record<string, unknown>[];
  targetUsd: string;
  keep: boolean;
  ttlSeconds: number;
  /** Under a requests-per-minute limit: the calls the object wants to hold unrecorded (else ignored). */
  callSlots?: number;
  /** The developer keys whose budget the object leases: key id → 8-decimal USD wanted. */
  budgets?: Record<string, string>;
  /** Request-log rows of the calls the object decided (call-log.ts): written by the same statement, each once. */
  logs?: readonly CallLogRow[];
}

/** The statement itself: the lease, and the bookings' outcomes in the order given. Throws when nothing was written. */
async function settleLeaseRows(
  db: SqlDatabase,
  flush: LeaseFlush,
): Promise<{ lease: LeaseStateRow; bookings: BookingRow[]; tracedApps: string[]; webhookEvents: boolean }> {
  const {
    results,
    traced_apps: traced,
    webhook_events: webhookEvents,
    ...lease
  } = await queryOne<SettledLeaseRow>(
    db,
    // The request log rides in the same statement (faucet_flush_lease): written with the bookings or
    // not at all. It also names the rows' apps that export traces (docs/traces.md), so the object
    // learns whom to trace without a statement of its own.
    sql`select (f.lease).*, f.results, f.traced_apps, f.webhook_events
          from faucet_flush_lease(${flush.endUserId}::uuid, ${flush.leaseKey}, ${JSON.stringify(flush.logs ?? [])}::jsonb,
      ${JSON.stringify(flush.calls)}::jsonb, ${JSON.stringify(flush.bookings)}::jsonb,
      ${flush.targetUsd}::numeric, ${flush.keep}::boolean, ${flush.ttlSeconds}::integer, ${flush.callSlots ?? null}::integer,
      ${flush.budgets === undefined ? null : JSON.stringify(flush.budgets)}::jsonb) f`,
  );
  if (lease.amount_usd === null) throw new Error('faucet_settle_lease returned no lease');
  const answered = typeof results === 'string' ? (JSON.parse(results) as BookingRow[]) : results;
  const bookings = new Array<BookingRow>(flush.bookings.length);
  for (const row of answered) {
    if (!(row.ordinal >= 1 && row.ordinal <= flush.bookings.length)) {
      throw new Error(`faucet_settle_lease returned an unknown ordinal ${row.ordinal}`);
    }
    bookings[row.ordinal - 1] = row;
  }
  for (let index = 0; index < bookings.length; index++) {
    if (bookings[index] === undefined) throw new Error(`faucet_settle_lease did not answer booking ${index}`);
  }
  return {
    lease,
    bookings,
    tracedApps: typeof traced === 'string' ? (JSON.parse(traced) as string[]) : (traced ?? []),
    webhookEvents: webhookEvents === true,
  };
}

/** What a wallet object needs of each booking's outcome (the amounts are its own already; none is parsed). */
export interface LeaseFlushOutcome {
  outcome: BookingRow['outcome'];
  reason: BookingRow['reason'];
  message: string | null;
}

export interface LeaseFlushResult {
  results: LeaseFlushOutcome[];
  leaseUsd: string;
  leaseExpiresAt: Date;
  /** As faucet_settle_lease answers it: null, or {day?: {limit, room}, month?: {limit, room}}. */
  spendLimits: unknown;
  /** As faucet_settle_lease answers it: null, or {limit, slots, window}. */
  rateLimit: unknown;
  keyBudgets: KeyBudgets;
  /** The apps of the flush's request-log rows with an enabled trace export. */
  tracedApps: string[];
  /** The flush's bookings wrote webhook events (docs/webhooks.md). */
  webhookEvents: boolean;
}

/** The wallet object's flush (its alarm's one statement), on what it keeps as it keeps it. */
export async function flushLease(db: SqlDatabase, flush: LeaseFlush): Promise<LeaseFlushResult> {
  const { lease, bookings, tracedApps, webhookEvents } = await settleLeaseRows(db, flush);
  return {
    results: bookings.map((row) => ({ outcome: row.outcome, reason: row.reason, message: row.message })),
    leaseUsd: lease.amount_usd,
    leaseExpiresAt: new Date(lease.expires_at),
    spendLimits: lease.spend_limits,
    rateLimit: lease.rate_limit,
    keyBudgets: keyBudgetsOf(lease.key_budgets),
    tracedApps,
    webhookEvents,
  };
}

const optionalUsd = (value: Usd | null, field: string): string | null => (value === null ? null : usdParameter(value, field));

/** One element of `p_calls`: the gateway_calls columns. */
function callRecord(call: LeasedCallRecord): CallRecordColumns {
  return {
    id: call.id,
    money_key: call.moneyKey,
    client_request_id: call.clientRequestId,
    fingerprint: call.fingerprint,
    app_id: call.appId,
    end_user_id: call.endUserId,
    feature_key: call.featureKey,
    route_mode: call.routeMode,
    provider: call.provider,
    model: call.model,
    provider_credential_id: call.providerCredentialId ?? null,
    bound_input_tokens: call.boundInputTokens,
    bound_output_tokens: call.boundOutputTokens,
    deadline_at: call.deadlineAt.toISOString(),
    created_at: call.createdAt.toISOString(),
    developer_price_per_mtok_usd: optionalUsd(call.developerPricePerMtokUsd, 'developerPricePerMtokUsd'),
    open_fee_usd: optionalUsd(call.openFeeUsd, 'openFeeUsd'),
    developer_share_bps: call.developerShareBps,
    platform_markup_bps: call.platformMarkupBps,
    platform_fee_bps: call.platformFeeBps,
    fallback_models: call.fallbackModels,
    bound_cache_lifetime: call.boundCacheLifetime ?? null,
  };
}

/**
 * Books the flush and sets the lease in one statement. A booking that cannot be encoded (an amount
 * in another currency) is refused here and not sent. Throws (nothing written, the lease unchanged)
 * when the statement fails or the input is malformed (invalid_request): retry the same flush.
 */
export async function settleLease(db: SqlDatabase, input: SettleLeaseInput): Promise<SettleLeaseResult> {
  if (input.calls.length > MAX_BOOKINGS_PER_BATCH || input.bookings.length > MAX_BOOKINGS_PER_BATCH) {
    throw new RangeError(`at most ${MAX_BOOKINGS_PER_BATCH} call records and bookings per flush`);
  }
  if (!input.leaseKey.startsWith(LEASE_KEY_PREFIX)) throw new RangeError(`a lease key starts with ${LEASE_KEY_PREFIX}`);
  const { results, sent } = encodeBookings(input.bookings);
  const { lease, bookings } = await settleLeaseRows(db, {
    endUserId: requireUuid(input.endUserId, 'end user'),
    leaseKey: input.leaseKey,
    calls: input.calls.map(callRecord),
    bookings: sent.map((item) => item.element),
    targetUsd: usdParameter(input.target, 'target'),
    keep: input.keep,
    ttlSeconds: input.ttlSeconds,
    callSlots: input.callSlots,
    budgets:
      input.budgets === undefined
        ? undefined
        : Object.fromEntries(Object.entries(input.budgets).map(([id, amount]) => [id, usdParameter(amount, 'budget')])),
  });
  bookings.forEach((row, position) => {
    const item = sent[position] as (typeof sent)[number];
    results[item.index] = bookingResult(item.index, input.bookings[item.index]!.requestId, row);
  });
  return {
    results: results.map((entry, index) => {
      if (entry === undefined) throw new Error(`faucet_settle_lease returned no row for booking ${index}`);
      return entry;
    }),
    lease: {
      amount: parseDatabaseAmount(lease.amount_usd),
      expiresAt: new Date(lease.expires_at),
      status: lease.status,
    },
    balanceUsd: parseDatabaseAmount(lease.wallet_balance_usd),
    availableUsd: parseDatabaseAmount(lease.available_usd),
    rateLimit: lease.rate_limit,
    keyBudgets: keyBudgetsOf(lease.key_budgets),
  };
}
