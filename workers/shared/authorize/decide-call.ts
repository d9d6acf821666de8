/**
 * The one decision of a gateway call (docs/edge.md, docs/architecture.md "Where each decision
 * lives"), taken by the end user's wallet object — the only path that authorizes a call: given the
 * facts of the call (what it asks for, and what the session's context answered: its checks, the
 * feature's route policy, prices and output cap, the end user's and the developer's keys of the
 * provider) and the room the object holds (its lease of the balance, the spend limits' rooms and
 * call slots it carries, its part of each developer key's budget, the calls it has authorized), it
 * answers
 * - `authorized`: the route (DESIGN §6), the key, the hold (the call's worst case on its route) and,
 *   on the developer_key route, what it reserves of the key's budget lease;
 * - `refused`: the code, the limit it names and `retry-after`;
 * - `needs_room`: the lease (and the key's budget lease) cannot cover it: renew once for this much,
 *   then ask again with `renewed` set — what the renewed room still lacks is then the refusal.
 * Pure: no clock (the room says when it is), no I/O. Amounts are `Usd`, through workers/shared/money.
 */
import { addUsd, compareUsd, priceTokensThenRound, subtractUsd, zeroUsd, type Usd } from '../money/index.ts';
import type { LeaseContextRefusal, LeasedRoute, RoutePolicy, StoredKey } from '../wallet/lease-context.ts';
import type { CloudRouteMode } from '../wire/route-modes.ts';

/** What the call asks for, as the gateway bounded it. */
export interface CallAsk {
  /** Null: the gateway chooses. */
  requestedRoute: CloudRouteMode | null;
  boundInputTokens: number;
  boundOutputTokens: number;
  /** The worst-case retail on the platform route; null: the model has no platform price. */
  platformHold: Usd | null;
  /** The worst-case upstream cost at catalog price (a developer key's budget); null: unpriced. */
  catalogCost: Usd | null;
  /** The platform pool has a key for the call's provider. */
  poolAvailable: boolean;
  /** When the call is decided (epoch ms), and the latest it may still run (deadline and grace): what a lease must outlive. */
  askedAt: number;
  runsUntil: number;
}

/** What the session's context (faucet_lease_context) answered for the call. */
export interface CallContextFacts {
  /** `leasable`: the checks passed and the call is decided here; else the context's refusal. */
  outcome: 'leasable' | LeaseContextRefusal;
  /** Epoch ms; null when the context has none. */
  sessionExpiresAt: number | null;
  /** The session's end user is the one the object is named after (the token's wallet part proves nothing). */
  ownsWallet: boolean;
  /** The call's provider (a developer's `custom` server is served at the feature's price, its cost unknown). */
  provider: string;
  /** The feature's route policy: `byok_first` tries the end user's key before the developer's and the platform. */
  routePolicy: RoutePolicy | null;
  /** The end user's active key of the provider (the newest), and the app developer's. */
  userKey: StoredKey | null;
  developerKey: StoredKey | null;
  maxOutputTokens: number | null;
  developerPricePerMtok: Usd | null;
  openFee: Usd | null;
}

export interface CallFacts {
  call: CallAsk;
  context: CallContextFacts;
}

/** An app's per-end-user spend limit and the room it leaves the lease in all. */
export interface SpendLimitRoom {
  period: 'month' | 'day';
  /** The limit as the refusal names it (8-decimal USD). */
  limitUsd: string;
  room: Usd;
}

/**
 * Under a requests-per-minute limit: how many calls the object may hold that Postgres has no record
 * of, and the end user's 60 s window as Postgres had it (epoch ms).
 */
export interface RateRoom {
  limit: number;
  slots: number;
  windowMs: readonly number[];
}

/** Part of a developer key's monthly budget the object holds, and what its calls commit of it. */
export interface KeyBudgetRoom {
  amount: Usd;
  /** Epoch ms: the lease's life, or the month's start when sooner. */
  expiresAt: number;
  committed: Usd;
}

/** The room the wallet object holds when it decides. */
export interface CallRoom {
  /** Epoch ms. */
  now: number;
  /** The lease was renewed for this call (once): what it still lacks is refused, not asked for again. */
  renewed: boolean;
  /** A release or a recall's debit is under way: the lease in memory is not what Postgres will hold. */
  recalling: boolean;
  lease: { amount: Usd; expiresAt: number; spendLimits: readonly SpendLimitRoom[]; rate: RateRoom | null };
  /** The calls in flight at their worst case, the settled and unflushed ones at their retail. */
  committed: Usd;
  /** The object's calls of the last minute Postgres has no record of (in flight, or settled and unflushed). */
  unrecordedCalls: number;
  /** When each call the object holds (but refused ones) was authorized: the rate window's other part. */
  callTimes: readonly number[];
  /** By developer key id (absent: none of its budget held). */
  keyBudgets: Readonly<Record<string, KeyBudgetRoom>>;
  /** Developer keys whose budget a recent renewal found no room in: not asked again for a while. */
  budgetShort: ReadonlySet<string>;
  /** Until when the call's client request id is claimed (epoch ms); null: not claimed. */
  claimedUntil: number | null;
}

export type CallRefusal =
  | LeaseContextRefusal
  | 'conflict'
  | 'byok_missing'
  | 'developer_key_missing'
  | 'unpriced'
  | 'no_pool'
  | 'budget_exceeded'
  | 'rate_limited'
  | 'insufficient_balance'
  | 'spend_limit_month'
  | 'spend_limit_day';

/** Set on an answer after a renewal that found no room in this developer key's budget: the object marks it short. */
interface BudgetShortMark {
  budgetShort?: string;
}

export type CallDecision =
  | ({
      outcome: 'authorized';
      route: LeasedRoute;
      /** The end user's key (byok) or the developer's (developer_key); null on the platform. */
      key: StoredKey | null;
      /** The call's worst case on its route, held on the lease. */
      hold: Usd;
      /** On the developer_key route: what it reserves of the key's budget lease. */
      budget: { keyId: string; amount: Usd } | null;
      /** The output bound capped by the feature's output cap. */
      boundOutputTokens: number;
    } & BudgetShortMark)
  | ({ outcome: 'refused'; code: CallRefusal; refusedLimit?: string; retryAfterSeconds?: number } & BudgetShortMark)
  | { outcome: 'needs_room'; leaseNeed: Usd; budgetNeed: { keyId: string; amount: Usd } | null };

export function decideCall(facts: CallFacts, room: CallRoom): CallDecision {
  const { call, context } = facts;
  const failed = checkCall(context, call.askedAt);
  if (failed !== null) return refused(failed);

  const choice = chooseRoute(facts);
  if ('refusal' in choice) return refused(choice.refusal);
  let { route } = choice;
  const boundOutputTokens = Math.min(call.boundOutputTokens, context.maxOutputTokens ?? call.boundOutputTokens);
  const platformWorst = call.platformHold ?? zeroUsd();
  // What the call reserves of a developer key's budget: its worst-case upstream cost (0 for a custom
  // server's model at the feature's price, whose cost Faucet cannot know).
  const keyWorst = call.catalogCost ?? zeroUsd();
  let keyId = route === 'developer_key' ? (context.developerKey?.id ?? null) : null;
  // Past the key's budget the platform takes a call that asked for no route, when it can serve it;
  // one that asked for the key is refused.
  const platformFallback = call.requestedRoute === null && call.platformHold !== null && call.poolAvailable;
  if (keyId !== null && room.budgetShort.has(keyId)) {
    if (!platformFallback) return refused('budget_exceeded');
    route = 'platform';
    keyId = null;
  }
  let hold = worstCase(route, facts, boundOutputTokens, platformWorst, keyWorst);

  if (!room.renewed) {
    if (isClaimed(room)) return refused('conflict');
    if (
      room.recalling ||
      !leaseCovers(room, hold, call.runsUntil) ||
      (keyId !== null && budgetFit(room, keyId, keyWorst, call.runsUntil) !== 'covered')
    ) {
      // With a fallback to the platform the renewal asks for the larger worst case: either route may be taken.
      return {
        outcome: 'needs_room',
        leaseNeed: keyId !== null && platformFallback ? maxUsd(hold, platformWorst) : hold,
        budgetNeed: keyId === null ? null : { keyId, amount: keyWorst },
      };
    }
    return authorized(route, keyId, hold, keyWorst, boundOutputTokens, facts);
  }

  // After the one renewal: the window first, then the key's budget, then the balance and spend limits.
  const { rate } = room.lease;
  if (rate !== null && !hasCallSlot(room)) {
    return { outcome: 'refused', code: 'rate_limited', refusedLimit: String(rate.limit), retryAfterSeconds: retryAfterSeconds(rate, room) };
  }
  const fit = keyId === null ? 'covered' : budgetFit(room, keyId, keyWorst, call.runsUntil);
  const mark: BudgetShortMark = {};
  // A budget lease renewed with too little room, or for less than the call may run, is no room.
  if (keyId !== null && fit !== 'covered') {
    // The other objects' leases hold the budget: the platform, or refused.
    mark.budgetShort = keyId;
    if (!platformFallback) return { ...refused('budget_exceeded'), ...mark };
    route = 'platform';
    keyId = null;
    hold = platformWorst;
  }
  if (!leaseHolds(room, hold, call.runsUntil)) {
    // Postgres capped the lease by the app's spend limit or by the balance: the refusal says which.
    const limit = refusingLimit(room, hold);
    return limit === null
      ? { ...refused('insufficient_balance'), ...mark }
      : { ...refused(`spend_limit_${limit.period}`), refusedLimit: limit.limitUsd, ...mark };
  }
  // The renewal awaited Postgres: another call may have claimed the id meanwhile.
  if (isClaimed(room)) return { ...refused('conflict'), ...mark };
  return { ...authorized(route, keyId, hold, keyWorst, boundOutputTokens, facts), ...mark };
}

/**
 * The checks every call passes, a gateway call or a local model's usage report (POST
 * /v1/usage/local): the session, developer, app, feature and model as the context answered them; then
 * the session's life and the wallet's owner. Null: passed.
 */
export function checkCall(
  context: Pick<CallContextFacts, 'outcome' | 'sessionExpiresAt' | 'ownsWallet'>,
  askedAt: number,
): LeaseContextRefusal | null {
  if (context.outcome !== 'leasable') return context.outcome;
  if ((context.sessionExpiresAt ?? 0) <= askedAt || !context.ownsWallet) return 'unauthorized';
  return null;
}

/**
 * The route (DESIGN §6), before any room is counted: the end user's own key when the call asks for
 * byok or the feature puts it first; else the developer's key, when the call asks for it or for
 * nothing and its cost can be counted against the key's budget (a catalog price, or a developer's
 * custom server at the feature's price); else the platform pool, when the model has a platform price
 * and the pool a key of its provider. A route asked for that cannot be taken is refused naming why;
 * the developer key's budget is counted with the room (`decideCall`).
 */
export function chooseRoute(facts: CallFacts): { route: LeasedRoute } | { refusal: CallRefusal } {
  const { call, context } = facts;
  const asked = call.requestedRoute;
  if (asked === 'byok' || (asked === null && context.routePolicy === 'byok_first')) {
    if (context.userKey !== null) return { route: 'byok' };
    if (asked === 'byok') return { refusal: 'byok_missing' };
  }
  if (asked === null || asked === 'developer_key') {
    const counted = call.catalogCost !== null || (context.provider === 'custom' && context.developerPricePerMtok !== null);
    if (context.developerKey === null) {
      if (asked === 'developer_key') return { refusal: 'developer_key_missing' };
    } else if (!counted) {
      if (asked === 'developer_key') return { refusal: 'unpriced' };
    } else {
      return { route: 'developer_key' };
    }
  }
  if (call.platformHold === null) return { refusal: 'unpriced' };
  if (!call.poolAvailable) return { refusal: 'no_pool' };
  return { route: 'platform' };
}

/**
 * Whether the lease holds one more call of `worst` until `until`, with a call slot for it under a
 * requests-per-minute limit: the object asks for the context and a renewal in one statement when not.
 */
export function leaseCovers(room: Pick<CallRoom, 'lease' | 'committed' | 'unrecordedCalls'>, worst: Usd, until: number): boolean {
  return leaseHolds(room, worst, until) && hasCallSlot(room);
}

/**
 * Whether the key's budget lease holds one more call of `worst` upstream cost that may run until
 * `until`: `covered`; `ends_first` when it has the room but ends before the call may; `no_room`
 * otherwise (none held, or too little). A lease that ends at the start of a month (Postgres never
 * lends a month's budget into the next) covers a call it is alive for: the call is counted in the month it was authorized in, and its cost in the month
 * it is booked in.
 */
export function budgetFit(
  room: Pick<CallRoom, 'keyBudgets' | 'now'>,
  keyId: string,
  worst: Usd,
  until: number,
): 'covered' | 'ends_first' | 'no_room' {
  const budget = room.keyBudgets[keyId];
  if (budget === undefined || compareUsd(subtractUsd(budget.amount, budget.committed), worst) < 0) return 'no_room';
  if (budget.expiresAt >= until || (isMonthStart(budget.expiresAt) && budget.expiresAt > room.now)) return 'covered';
  return 'ends_first';
}

/**
 * Seconds until one more call fits the window — when the oldest call whose leaving brings the window
 * (Postgres's, with the object's unrecorded calls) below the limit is 60 s old; 1 to 60.
 */
export function retryAfterSeconds(rate: RateRoom, room: Pick<CallRoom, 'callTimes' | 'now'>): number {
  const { now } = room;
  const times = [...rate.windowMs, ...room.callTimes].filter((at) => at > now - 60_000).sort((a, b) => a - b);
  if (times.length < rate.limit) return 1;
  const leaving = times[Math.min(times.length - rate.limit, times.length - 1)] as number;
  return Math.min(Math.max(Math.ceil((leaving + 60_000 - now) / 1000), 1), 60);
}

/** The call's worst case on `route`: the platform price; the open fee (byok); the feature's price for the bound tokens, else the catalog cost (developer_key). */
function worstCase(route: LeasedRoute, facts: CallFacts, boundOutputTokens: number, platformWorst: Usd, keyWorst: Usd): Usd {
  const { context, call } = facts;
  return routeHold(route, context, call.boundInputTokens + boundOutputTokens, platformWorst, keyWorst);
}

/**
 * What a call holds on `route` for `boundTokens` (input and output bounds): the platform price
 * (`platformWorst`); the open fee (byok); the feature's price for the tokens, else the catalog cost
 * (`keyWorst`, developer_key). A quota step (quota-steps.ts) holds the same at its larger bound.
 */
export function routeHold(
  route: LeasedRoute,
  prices: Pick<CallContextFacts, 'openFee' | 'developerPricePerMtok'>,
  boundTokens: number,
  platformWorst: Usd,
  keyWorst: Usd,
): Usd {
  if (route === 'byok') return prices.openFee ?? zeroUsd();
  if (route === 'platform') return platformWorst;
  if (prices.developerPricePerMtok === null) return keyWorst;
  // Rounded up to 10⁻⁸ USD: the hold never falls short of the price.
  return priceTokensThenRound([[prices.developerPricePerMtok, BigInt(boundTokens)]], 'up');
}

function authorized(
  route: LeasedRoute,
  keyId: string | null,
  hold: Usd,
  keyWorst: Usd,
  boundOutputTokens: number,
  facts: CallFacts,
): CallDecision & { outcome: 'authorized' } {
  return {
    outcome: 'authorized',
    route,
    key: route === 'byok' ? facts.context.userKey : route === 'developer_key' ? facts.context.developerKey : null,
    hold,
    budget: keyId === null ? null : { keyId, amount: keyWorst },
    boundOutputTokens,
  };
}

const refused = (code: CallRefusal) => ({ outcome: 'refused', code }) as const;

const isClaimed = (room: CallRoom): boolean => room.claimedUntil !== null && room.claimedUntil > room.now;

/** The lease, less what is committed, holds `worst`, and lives until `until`. */
export function leaseHolds(room: Pick<CallRoom, 'lease' | 'committed'>, worst: Usd, until: number): boolean {
  return room.lease.expiresAt >= until && compareUsd(subtractUsd(room.lease.amount, room.committed), worst) >= 0;
}

/** One more call fits the lease's call slots (always, without a requests-per-minute limit). */
function hasCallSlot(room: Pick<CallRoom, 'lease' | 'unrecordedCalls'>): boolean {
  return room.lease.rate === null || room.unrecordedCalls + 1 <= room.lease.rate.slots;
}

/**
 * Which spend limit refuses a call the lease cannot cover: the first (the month, then the day, as the
 * refusal names them) whose room is below what the lease would hold with the call; null: the
 * balance is what falls short.
 */
export function refusingLimit(room: Pick<CallRoom, 'lease' | 'committed'>, worst: Usd): SpendLimitRoom | null {
  const needed = addUsd(room.committed, worst);
  return room.lease.spendLimits.find((limit) => compareUsd(needed, limit.room) > 0) ?? null;
}

function maxUsd(a: Usd, b: Usd): Usd {
  return compareUsd(a, b) >= 0 ? a : b;
}

/** Whether the instant is the start of a calendar month (UTC). */
function isMonthStart(at: number): boolean {
  const date = new Date(at);
  return date.getTime() === Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}
