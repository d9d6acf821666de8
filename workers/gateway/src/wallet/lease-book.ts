/**
 * A wallet object's accounts, in memory and in its storage (docs/edge.md, "The wallet object"): the
 * lease Postgres granted, the calls in flight (each reserving its worst case) and the settled calls
 * not yet flushed (each counting its retail). A call is covered when the lease, less everything
 * committed, holds its worst case and the lease outlives the call. On the developer_key route the
 * same again on the key's budget lease: the worst-case upstream cost in flight, the recorded one once
 * settled. Amounts are integer units of 10⁻⁸ USD (bigint), never floats.
 */
import { formatUsd, parseDatabaseAmount, usdFromUnits, usdToUnits } from '#shared/money/index.ts';
import type { LeasedRoute } from '#shared/wallet/lease-context.ts';
import type { KeyBudgets } from '#shared/wallet/settle-lease.ts';

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
  /** The gateway_calls record the flush writes (column names as in Postgres). */
  record: Record<string, unknown>;
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

/**
 * Whether the key's budget lease holds one more call of `worst` upstream cost that may run until
 * `until` (epoch ms; `now` the time of the decision): `covered`; `ends_first` when it has the room but
 * ends before the call may; `no_room` otherwise (none held, or too little). A lease that ends at the
 * start of a month (Postgres never lends a month's budget into the next) covers a call it is alive
 * for, as the per-call path's reservation does: the call is counted in the month it was authorized
 * in, and its cost in the month it is booked in.
 */
export function budgetFit(
  budget: KeyBudget | undefined,
  committed: bigint,
  worst: bigint,
  until: number,
  now: number,
): 'covered' | 'ends_first' | 'no_room' {
  if (budget === undefined || budget.units - committed < worst) return 'no_room';
  if (budget.expiresAt >= until || (isMonthStart(budget.expiresAt) && budget.expiresAt > now)) return 'covered';
  return 'ends_first';
}

/** Whether the instant is the start of a calendar month (UTC). */
function isMonthStart(at: number): boolean {
  const date = new Date(at);
  return date.getTime() === Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

/**
 * The end user's worst case on the developer_key route (faucet_authorize_call's hold): the feature's
 * price for the bound tokens, rounded up to 10⁻⁸ USD (faucet_developer_price), else the catalog cost.
 */
export function developerKeyHold(pricePerMtokUsd: string | null, tokens: number, catalogCost: bigint): bigint {
  if (pricePerMtokUsd === null) return catalogCost;
  const product = units(pricePerMtokUsd) * BigInt(tokens);
  return (product + 999_999n) / 1_000_000n;
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

/** Whether one more call fits the lease's call slots (always, without a requests-per-minute limit). */
export function hasCallSlot(lease: Lease, unrecordedCalls: number): boolean {
  return lease.rate === undefined || unrecordedCalls + 1 <= lease.rate.slots;
}

/**
 * Seconds until one more call fits the window — when the oldest call whose leaving brings the window
 * (Postgres's, with the object's unrecorded calls, `callTimes`) below the limit is 60 s old; 1 to 60.
 */
export function retryAfterSeconds(rate: LeaseRate, callTimes: number[], now: number): number {
  const times = [...rate.windowMs, ...callTimes].filter((at) => at > now - 60_000).sort((a, b) => a - b);
  if (times.length < rate.limit) return 1;
  const leaving = times[Math.min(times.length - rate.limit, times.length - 1)] as number;
  return Math.min(Math.max(Math.ceil((leaving + 60_000 - now) / 1000), 1), 60);
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

/**
 * Which spend limit refuses a call the lease cannot cover: the first (the month, then the day, as
 * the per-call path names them) whose room is below what the lease would have to hold with the call;
 * null: the balance is what falls short.
 */
export function refusingLimit(lease: Lease, committed: bigint, worst: bigint): LeaseLimit | null {
  return lease.limits?.find((limit) => committed + worst > limit.roomUnits) ?? null;
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

/** Whether the lease covers one more call of `worst` units that may run until `until` (epoch ms). */
export function covers(lease: Lease, committed: bigint, worst: bigint, until: number): boolean {
  return lease.expiresAt >= until && lease.units - committed >= worst;
}
