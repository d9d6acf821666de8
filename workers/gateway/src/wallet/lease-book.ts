/**
 * A wallet object's accounts, in memory and in its storage (docs/edge.md, "The wallet object"): the
 * lease Postgres granted, the calls in flight (each reserving its worst case) and the settled calls
 * not yet flushed (each counting its retail); on the developer_key route the same again on the key's
 * budget lease: the worst-case upstream cost in flight, the recorded one once settled. `callRoom`
 * hands them to the decision (workers/shared/authorize/decide-call.ts), which says whether a call
 * fits. Amounts are integer units of 10⁻⁸ USD (bigint), never floats.
 */
import { formatUsd, parseDatabaseAmount, usdFromUnits, usdToUnits } from '#shared/money/index.ts';
import type { CallRoom, KeyBudgetRoom } from '#shared/authorize/decide-call.ts';
import type { LeasedRoute } from '#shared/wallet/lease-context.ts';
import type { CallRecordColumns, KeyBudgets } from '#shared/wallet/settle-lease.ts';
import { callLogRow, type CallLogFacts, type CallLogRow } from '#shared/calls/call-log.ts';

/** One call the object knows of, as stored under `call:<id>`. */
export interface StoredCall {
  id: string;
  moneyKey: string;
  clientRequestId: string;
  state: 'in_flight' | 'settled' | 'refused';
  /** The worst case reserved while in flight (units). */
  reservedUnits: bigint;
  /** On the developer_key route: the worst-case upstream cost reserved on the key's budget while in flight (units). */
  budgetUnits?: bigint;
  /** The settlement's retail (units), once settled. */
  retailUnits: bigint;
  /** Epoch ms after which an unsettled call is booked at its bound. */
  sweepAt: number;
  /** The gateway_calls record the flush writes (the schema's columns, named as in Postgres). */
  record: CallRecordColumns;
  /** Its request-log row, once settled with the gateway's account of it (written by the same flush). */
  log?: CallLogRow;
  /** How to rate it at its bound if it is never settled. */
  rating: {
    developerShareBps: number | null;
    developerPricePerMtokUsd: string | null;
    openFeeUsd: string | null;
    maxOutputTokens: number | null;
    platformMarkupBps: number;
    platformFeeBps: number;
    authorizedAt: number;
    featureKey: string;
    appId: string;
    endUserId: string;
    candidates: Array<{ provider: string; model: string; boundInputTokens: number; boundOutputTokens: number }>;
    /** The prompt's longest cache-breakpoint lifetime (absent on calls stored before it was kept: none). */
    cacheLifetime?: '5m' | '1h' | null;
    /** Absent on calls stored before the byok route was leased: platform. */
    routeMode?: LeasedRoute;
    /** On the byok route the end user's key the call used, on the developer_key route the developer's. */
    providerCredentialId?: string | null;
  };
  /** The booking (faucet_usage_booking as JSON), once settled. */
  booking: Record<string, unknown> | null;
  /** Why Postgres refused the booking (state `refused`). */
  refusal: string | null;
}

export interface Lease {
  units: bigint;
  /** Epoch ms; 0: no lease. */
  expiresAt: number;
  /** The app's spend limits when Postgres last set the lease (absent: none). */
  limits?: LeaseLimit[];
  /** The app's requests-per-minute limit when Postgres last set the lease (absent: none). */
  rate?: LeaseRate;
  /** Each developer key's budget lease (absent or missing a key: none of it held). */
  budgets?: Record<string, KeyBudget>;
}

/** Part of a developer key's monthly budget Postgres reserved for this object (faucet_settle_lease's key_budgets). */
export interface KeyBudget {
  units: bigint;
  /** Epoch ms: the lease's life, or the month's end when sooner. */
  expiresAt: number;
}

/** key_budgets as the object keeps them: the keys of which it holds something. */
export function heldKeyBudgets(granted: KeyBudgets): Record<string, KeyBudget> {
  const budgets: Record<string, KeyBudget> = {};
  for (const [id, { amount, expiresAt }] of Object.entries(granted)) {
    const held = units(amount);
    if (held > 0n && expiresAt !== null) budgets[id] = { units: held, expiresAt };
  }
  return budgets;
}

/** `held` with the keys of `granted` as granted now (one granted nothing is no longer held). */
export function mergeKeyBudgets(held: Record<string, KeyBudget> | undefined, granted: KeyBudgets): Record<string, KeyBudget> {
  const merged = { ...held };
  for (const id of Object.keys(granted)) delete merged[id];
  return { ...merged, ...heldKeyBudgets(granted) };
}

/** What a call holds of a developer key's budget: its worst-case cost in flight, the cost its booking records once settled. */
export function budgetCommittedUnits(call: StoredCall, keyId: string): bigint {
  if (call.rating.routeMode !== 'developer_key' || call.rating.providerCredentialId !== keyId) return 0n;
  if (call.state === 'in_flight') return call.budgetUnits ?? 0n;
  if (call.state === 'settled') return bookedCostUnits(call.booking);
  return 0n;
}

/** The upstream cost a booking (faucet_usage_booking as JSON) records, in units. */
function bookedCostUnits(booking: Record<string, unknown> | null): bigint {
  const cost = booking?.upstream_cost;
  return typeof cost === 'string' ? units(cost) : 0n;
}

/**
 * Under a requests-per-minute limit (faucet_settle_lease's rate_limit): how many calls the object may
 * hold that Postgres has no record of (in flight, or settled and not flushed), and the end user's
 * 60 s window as Postgres had it (epoch ms, oldest first, at most `limit`).
 */
export interface LeaseRate {
  limit: number;
  slots: number;
  windowMs: number[];
}

export function leaseRate(rateLimit: unknown): LeaseRate | undefined {
  const parsed = typeof rateLimit === 'string' ? (JSON.parse(rateLimit) as unknown) : rateLimit;
  if (parsed === null || parsed === undefined) return undefined;
  const { limit, slots, window } = parsed as { limit: number; slots: number; window: Array<number | string> };
  return { limit: Number(limit), slots: Number(slots), windowMs: window.map(Number) };
}

/** A per-end-user spend limit of the app and the room it leaves the lease in all (faucet_settle_lease's spend_limits). */
export interface LeaseLimit {
  period: 'month' | 'day';
  /** The limit, an 8-decimal USD string (the refusal names it). */
  limitUsd: string;
  roomUnits: bigint;
}

/** The spend limits as faucet_settle_lease answers them (null: the app sets none), month first. */
export function leaseLimits(spendLimits: unknown): LeaseLimit[] {
  const parsed = typeof spendLimits === 'string' ? (JSON.parse(spendLimits) as unknown) : spendLimits;
  if (parsed === null || parsed === undefined) return [];
  const limits: LeaseLimit[] = [];
  for (const period of ['month', 'day'] as const) {
    const entry = (parsed as Record<string, { limit: string; room: string } | undefined>)[period];
    if (entry !== undefined) limits.push({ period, limitUsd: entry.limit, roomUnits: units(entry.room) });
  }
  return limits;
}

export const units = (usd: string): bigint => usdToUnits(parseDatabaseAmount(usd));
export const usdString = (amount: bigint): string => formatUsd(usdFromUnits(amount));

/** In flight: its worst case; settled and unflushed: its retail; refused: nothing (Postgres holds nothing for it). */
export function committedUnits(call: StoredCall): bigint {
  if (call.state === 'in_flight') return call.reservedUnits;
  if (call.state === 'settled') return call.retailUnits;
  return 0n;
}

export function totalCommitted(calls: Iterable<StoredCall>): bigint {
  let total = 0n;
  for (const call of calls) total += committedUnits(call);
  return total;
}

/**
 * The room the object holds, as the decision reads it (workers/shared/authorize/decide-call.ts):
 * its lease, what its calls commit of it and of each key's budget lease, its unrecorded calls of the
 * last minute, and the call's request id claim.
 */
export function callRoom(state: {
  lease: Lease;
  calls: Iterable<StoredCall>;
  now: number;
  renewed: boolean;
  recalling: boolean;
  budgetShort: ReadonlySet<string>;
  claimedUntil: number | null;
}): CallRoom {
  const { lease, now } = state;
  const since = now - 60_000;
  const keyIds = Object.keys(lease.budgets ?? {});
  const keyCommitted = new Map<string, bigint>(keyIds.map((id) => [id, 0n]));
  const callTimes: number[] = [];
  let committed = 0n;
  let unrecordedCalls = 0;
  for (const call of state.calls) {
    committed += committedUnits(call);
    if (call.state === 'refused') continue;
    callTimes.push(call.rating.authorizedAt);
    // A call authorized more than a minute ago has left the end user's window.
    if (call.rating.authorizedAt > since) unrecordedCalls += 1;
    for (const id of keyIds) keyCommitted.set(id, (keyCommitted.get(id) as bigint) + budgetCommittedUnits(call, id));
  }
  const keyBudgets: Record<string, KeyBudgetRoom> = {};
  for (const [id, budget] of Object.entries(lease.budgets ?? {})) {
    keyBudgets[id] = {
      amount: usdFromUnits(budget.units),
      expiresAt: budget.expiresAt,
      committed: usdFromUnits(keyCommitted.get(id) as bigint),
    };
  }
  return {
    now,
    renewed: state.renewed,
    recalling: state.recalling,
    lease: {
      amount: usdFromUnits(lease.units),
      expiresAt: lease.expiresAt,
      spendLimits: (lease.limits ?? []).map((limit) => ({
        period: limit.period,
        limitUsd: limit.limitUsd,
        room: usdFromUnits(limit.roomUnits),
      })),
      rate: lease.rate ?? null,
    },
    committed: usdFromUnits(committed),
    unrecordedCalls,
    callTimes,
    keyBudgets,
    budgetShort: state.budgetShort,
    claimedUntil: state.claimedUntil,
  };
}

/** A call's request-log row: the gateway's facts on the object's record of whose call it was. */
export function logRowOf(record: CallRecordColumns, facts: CallLogFacts): CallLogRow {
  return callLogRow(
    {
      id: record.id,
      appId: record.app_id,
      endUserId: record.end_user_id,
      featureKey: record.feature_key,
      clientRequestId: record.client_request_id,
      provider: record.provider,
      model: record.model,
      routeMode: record.route_mode,
      providerCredentialId: record.provider_credential_id,
      createdAt: record.created_at,
    },
    facts,
  );
}
