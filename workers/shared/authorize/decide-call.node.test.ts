/**
 * The decision table of a call authorized by a wallet object (decide-call.ts), in Node: each row a
 * call's facts and the room its object holds, asserting the whole answer — outcome, route, key, hold,
 * budget reservation, refused limit, retry-after, what a renewal is asked for and a key marked short.
 */
import { describe, expect, it } from 'vitest';
import { formatUsd, parseWireAmount, usdFromUnits } from '../money/index.ts';
import type { LeasedRoute, StoredKey } from '../wallet/lease-context.ts';
import type { CloudRouteMode } from '../wire/route-modes.ts';
import { budgetFit, type CallDecision, type CallFacts, type CallRoom, decideCall, leaseCovers, retryAfterSeconds } from './decide-call.ts';

/** Mid-month, so that only the rows that say so meet a month's start. */
const now = Date.UTC(2026, 10, 15, 12);
/** A call may run 15 min and be settled within 10 more. */
const runsUntil = now + 25 * 60_000;
const minute = 60_000;

const key = (id: string): StoredKey => ({ id, ciphertext: `ct-${id}`, iv: `iv-${id}`, keyVersion: 1, baseUrl: null });
const userKey = key('user-key');
const developerKey = key('developer-key');
const usd = (amount: string) => parseWireAmount(amount);

/** A row's facts and room, flat; everything not named is the default below. */
interface Given {
  /** The context's answer (default leasable) and the session's. */
  context?: CallFacts['context']['outcome'];
  expired?: boolean;
  foreignWallet?: boolean;
  /**
   * The keys that make a route the one taken (default none: the platform): `byok` gives the end user
   * a key and the feature the byok_first policy, `developer_key` gives the developer a key.
   */
  route?: LeasedRoute | null;
  /** Override the keys and the policy `route` implies. */
  userKeyHeld?: boolean;
  developerKeyHeld?: boolean;
  policy?: 'platform_first' | 'byok_first';
  provider?: string;
  requested?: CloudRouteMode | null;
  platformHold?: string | null;
  catalogCost?: string | null;
  pool?: boolean;
  price?: string | null;
  openFee?: string | null;
  maxOutput?: number | null;
  tokens?: [input: number, output: number];
  /** The room. */
  renewed?: boolean;
  recalling?: boolean;
  lease?: string;
  /** The lease's end, from now (ms). */
  leaseEnds?: number;
  committed?: string;
  month?: [limit: string, room: string];
  day?: [limit: string, room: string];
  /** Requests per minute: the limit, the slots, Postgres's window (ms before now). */
  rate?: { limit: number; slots: number; window: number[] };
  unrecorded?: number;
  /** When the object's calls were authorized (ms before now). */
  callTimes?: number[];
  /** The developer key's budget lease: amount, committed, end (epoch ms). */
  budget?: { amount: string; committed?: string; expiresAt?: number };
  budgetShort?: boolean;
  /** The request id claimed until (ms from now). */
  claimed?: number;
}

function factsOf(given: Given): CallFacts {
  const route = given.route === undefined ? 'platform' : given.route;
  const [input, output] = given.tokens ?? [1_000, 4_000];
  const amount = (value: string | null | undefined, fallback: string | null) =>
    value === undefined ? (fallback === null ? null : usd(fallback)) : value === null ? null : usd(value);
  return {
    call: {
      requestedRoute: given.requested ?? null,
      boundInputTokens: input,
      boundOutputTokens: output,
      platformHold: amount(given.platformHold, '0.00100000'),
      catalogCost: amount(given.catalogCost, '0.00050000'),
      poolAvailable: given.pool ?? true,
      askedAt: now,
      runsUntil,
    },
    context: {
      outcome: given.context ?? 'leasable',
      sessionExpiresAt: given.expired ? now : now + 15 * minute,
      ownsWallet: !given.foreignWallet,
      provider: given.provider ?? 'openai',
      routePolicy: given.policy ?? (route === 'byok' ? 'byok_first' : 'platform_first'),
      userKey: (given.userKeyHeld ?? route === 'byok') ? userKey : null,
      developerKey: (given.developerKeyHeld ?? route === 'developer_key') ? developerKey : null,
      maxOutputTokens: given.maxOutput ?? null,
      developerPricePerMtok: amount(given.price, null),
      openFee: amount(given.openFee, null),
    },
  };
}

function roomOf(given: Given): CallRoom {
  const limits = [
    ...(given.month ? [{ period: 'month' as const, limitUsd: given.month[0], room: usd(given.month[1]) }] : []),
    ...(given.day ? [{ period: 'day' as const, limitUsd: given.day[0], room: usd(given.day[1]) }] : []),
  ];
  const rate = given.rate
    ? { limit: given.rate.limit, slots: given.rate.slots, windowMs: given.rate.window.map((ago) => now - ago) }
    : null;
  const { budget } = given;
  return {
    now,
    renewed: given.renewed ?? false,
    recalling: given.recalling ?? false,
    lease: { amount: usd(given.lease ?? '1.00000000'), expiresAt: now + (given.leaseEnds ?? 50 * minute), spendLimits: limits, rate },
    committed: usd(given.committed ?? '0.00000000'),
    unrecordedCalls: given.unrecorded ?? 0,
    callTimes: (given.callTimes ?? []).map((ago) => now - ago),
    keyBudgets: budget
      ? {
          [developerKey.id]: {
            amount: usd(budget.amount),
            committed: usd(budget.committed ?? '0.00000000'),
            expiresAt: budget.expiresAt ?? now + 50 * minute,
          },
        }
      : {},
    budgetShort: new Set(given.budgetShort ? [developerKey.id] : []),
    claimedUntil: given.claimed === undefined ? null : now + given.claimed,
  };
}

/** The answer with amounts as 8-decimal strings and keys by id: what a row asserts, whole. */
function plain(decision: CallDecision): Record<string, unknown> {
  switch (decision.outcome) {
    case 'authorized':
      return {
        outcome: 'authorized',
        route: decision.route,
        key: decision.key?.id ?? null,
        hold: formatUsd(decision.hold),
        budget: decision.budget === null ? null : `${decision.budget.keyId} ${formatUsd(decision.budget.amount)}`,
        boundOutputTokens: decision.boundOutputTokens,
        ...(decision.budgetShort === undefined ? {} : { budgetShort: decision.budgetShort }),
      };
    case 'needs_room':
      return {
        outcome: 'needs_room',
        leaseNeed: formatUsd(decision.leaseNeed),
        budgetNeed: decision.budgetNeed === null ? null : `${decision.budgetNeed.keyId} ${formatUsd(decision.budgetNeed.amount)}`,
      };
    default:
      return { ...decision };
  }
}

interface Row extends Given {
  name: string;
  expected: Record<string, unknown>;
}

const refused = (code: string, more: Record<string, unknown> = {}) => ({ outcome: 'refused', code, ...more });
const platform = (hold = '0.00100000', more: Record<string, unknown> = {}) => ({
  outcome: 'authorized',
  route: 'platform',
  key: null,
  hold,
  budget: null,
  boundOutputTokens: 4_000,
  ...more,
});
const onKey = (hold: string, budget = '0.00050000', boundOutputTokens = 4_000) => ({
  outcome: 'authorized',
  route: 'developer_key',
  key: developerKey.id,
  hold,
  budget: `${developerKey.id} ${budget}`,
  boundOutputTokens,
});
const needs = (leaseNeed: string, budgetNeed: string | null = null) => ({
  outcome: 'needs_room',
  leaseNeed,
  budgetNeed: budgetNeed === null ? null : `${developerKey.id} ${budgetNeed}`,
});
/** A developer key's budget lease that covers the call. */
const roomy = { amount: '0.10000000' };

function check(row: Row): void {
  expect(plain(decideCall(factsOf(row), roomOf(row)))).toEqual(row.expected);
}

describe('decideCall: the session, app, feature and model (the context answers them)', () => {
  it.each<Row>([
    { name: 'a leasable call of a live session of the wallet’s owner', expected: platform() },
    ...(['unauthorized', 'developer_suspended', 'unknown_feature', 'no_default_feature', 'app_archived', 'feature_archived'] as const).map(
      (code) => ({ name: `the context refuses it: ${code}`, context: code, expected: refused(code) }),
    ),
    { name: 'the model is not allowed', context: 'model_not_allowed', expected: refused('model_not_allowed') },
    { name: 'the routing changed since the gateway sized the hold', context: 'routing_changed', expected: refused('routing_changed') },
    { name: 'an expired session', expired: true, expected: refused('unauthorized') },
    { name: 'a token whose wallet part names another end user', foreignWallet: true, expected: refused('unauthorized') },
    {
      name: 'a refusal of the context comes before the session’s own checks',
      context: 'app_archived',
      expired: true,
      expected: refused('app_archived'),
    },
  ])('$name', check);
});

describe('decideCall: the route, the key and the hold', () => {
  it.each<Row>([
    // The platform route.
    { name: 'platform: held at the platform worst case', expected: platform() },
    { name: 'platform asked for', requested: 'platform', expected: platform() },
    { name: 'no key of either: the platform', route: null, expected: platform() },
    { name: 'platform without a platform price: unpriced', platformHold: null, expected: refused('unpriced') },
    { name: 'platform without a pool key of the provider: no_pool', pool: false, expected: refused('no_pool') },
    {
      name: 'platform asked for, unpriced: unpriced before the pool',
      requested: 'platform',
      platformHold: null,
      pool: false,
      expected: refused('unpriced'),
    },
    {
      name: 'the feature’s output cap bounds the output',
      maxOutput: 100,
      expected: platform('0.00100000', { boundOutputTokens: 100 }),
    },
    // The byok route.
    {
      name: 'byok without an open fee holds nothing',
      route: 'byok',
      expected: { outcome: 'authorized', route: 'byok', key: userKey.id, hold: '0.00000000', budget: null, boundOutputTokens: 4_000 },
    },
    {
      name: 'byok asked for, with an open fee: held at the fee',
      route: 'byok',
      requested: 'byok',
      openFee: '0.00200000',
      expected: { outcome: 'authorized', route: 'byok', key: userKey.id, hold: '0.00200000', budget: null, boundOutputTokens: 4_000 },
    },
    {
      name: 'byok needs no platform price nor pool',
      route: 'byok',
      platformHold: null,
      pool: false,
      expected: { outcome: 'authorized', route: 'byok', key: userKey.id, hold: '0.00000000', budget: null, boundOutputTokens: 4_000 },
    },
    // The developer_key route.
    {
      name: 'developer key without a feature price: held at the catalog cost',
      route: 'developer_key',
      budget: roomy,
      expected: onKey('0.00050000'),
    },
    {
      // 2.5 USD per million × 3 tokens = 0.0000075 exactly.
      name: 'developer key at the feature’s price for the bound tokens',
      route: 'developer_key',
      price: '2.50000000',
      tokens: [1, 2],
      budget: roomy,
      expected: onKey('0.00000750', '0.00050000', 2),
    },
    {
      // 0.00000001 USD per million × 1 token rounds up to one unit, rounded up so the hold never falls short.
      name: 'the feature’s price is rounded up to 10⁻⁸ USD',
      route: 'developer_key',
      price: '0.00000001',
      tokens: [1, 0],
      budget: roomy,
      expected: onKey('0.00000001', '0.00050000', 0),
    },
    {
      name: 'the price counts the output as capped by the feature',
      route: 'developer_key',
      price: '1.00000000',
      tokens: [1_000, 4_000],
      maxOutput: 1_000,
      budget: roomy,
      expected: onKey('0.00200000', '0.00050000', 1_000),
    },
    {
      name: 'a custom server at the feature’s price reserves nothing of the budget',
      route: 'developer_key',
      provider: 'custom',
      catalogCost: null,
      price: '2.00000000',
      budget: roomy,
      expected: onKey('0.01000000', '0.00000000'),
    },
    {
      name: 'developer key asked for, with no platform price nor pool',
      route: 'developer_key',
      requested: 'developer_key',
      platformHold: null,
      pool: false,
      budget: roomy,
      expected: onKey('0.00050000'),
    },
  ])('$name', check);
});

/** The byok route's answer with the end user's key. */
const byok = (hold = '0.00000000') => ({
  outcome: 'authorized',
  route: 'byok',
  key: userKey.id,
  hold,
  budget: null,
  boundOutputTokens: 4_000,
});

describe('decideCall: which route (DESIGN §6) — policy × route asked × keys × prices × pool', () => {
  const none = { route: null, userKeyHeld: false, developerKeyHeld: false } as const;
  it.each<Row>([
    // Nothing asked, platform_first: the developer's key, else the platform; the end user's key is not looked at.
    {
      name: 'platform_first, both keys: the developer’s',
      ...none,
      userKeyHeld: true,
      developerKeyHeld: true,
      budget: roomy,
      expected: onKey('0.00050000'),
    },
    { name: 'platform_first, only the end user’s key: the platform', ...none, userKeyHeld: true, expected: platform() },
    { name: 'platform_first, no key: the platform', ...none, expected: platform() },
    // byok_first: the end user's key, else as platform_first.
    {
      name: 'byok_first, both keys: the end user’s',
      ...none,
      policy: 'byok_first',
      userKeyHeld: true,
      developerKeyHeld: true,
      expected: byok(),
    },
    {
      name: 'byok_first, only the developer’s key: the developer’s',
      ...none,
      policy: 'byok_first',
      developerKeyHeld: true,
      budget: roomy,
      expected: onKey('0.00050000'),
    },
    { name: 'byok_first, no key: the platform', ...none, policy: 'byok_first', expected: platform() },
    { name: 'byok_first, no key, no pool: no_pool', ...none, policy: 'byok_first', pool: false, expected: refused('no_pool') },
    // byok asked for.
    {
      name: 'byok asked, the key held: byok whatever the policy',
      ...none,
      requested: 'byok',
      userKeyHeld: true,
      developerKeyHeld: true,
      expected: byok(),
    },
    {
      name: 'byok asked, no key: byok_missing (never the developer’s nor the platform)',
      ...none,
      requested: 'byok',
      developerKeyHeld: true,
      expected: refused('byok_missing'),
    },
    {
      name: 'byok asked, unpriced model, key held: byok',
      ...none,
      requested: 'byok',
      userKeyHeld: true,
      platformHold: null,
      catalogCost: null,
      expected: byok(),
    },
    // developer_key asked for.
    {
      name: 'developer_key asked, key held: the key, whatever the policy',
      ...none,
      requested: 'developer_key',
      policy: 'byok_first',
      userKeyHeld: true,
      developerKeyHeld: true,
      budget: roomy,
      expected: onKey('0.00050000'),
    },
    {
      name: 'developer_key asked, no key: developer_key_missing',
      ...none,
      requested: 'developer_key',
      userKeyHeld: true,
      expected: refused('developer_key_missing'),
    },
    {
      name: 'developer_key asked, no catalog price: unpriced',
      ...none,
      requested: 'developer_key',
      developerKeyHeld: true,
      catalogCost: null,
      expected: refused('unpriced'),
    },
    {
      name: 'developer_key asked, a custom server without a feature price: unpriced',
      ...none,
      requested: 'developer_key',
      developerKeyHeld: true,
      provider: 'custom',
      catalogCost: null,
      expected: refused('unpriced'),
    },
    {
      name: 'developer_key asked, a custom server at the feature’s price: the key, 0 reserved',
      ...none,
      requested: 'developer_key',
      developerKeyHeld: true,
      provider: 'custom',
      catalogCost: null,
      price: '1.00000000',
      budget: roomy,
      expected: onKey('0.00500000', '0.00000000'),
    },
    // Nothing asked, the developer's key unusable (no catalog price): the platform, else refused.
    {
      name: 'the developer’s key of an unpriced model, nothing asked: the platform',
      ...none,
      developerKeyHeld: true,
      catalogCost: null,
      expected: platform(),
    },
    {
      name: 'the developer’s key and no price at all: unpriced',
      ...none,
      developerKeyHeld: true,
      catalogCost: null,
      platformHold: null,
      expected: refused('unpriced'),
    },
    // platform asked for: no key is looked at.
    {
      name: 'platform asked, both keys and byok_first: the platform',
      ...none,
      requested: 'platform',
      policy: 'byok_first',
      userKeyHeld: true,
      developerKeyHeld: true,
      expected: platform(),
    },
    { name: 'platform asked, no pool: no_pool', ...none, requested: 'platform', pool: false, expected: refused('no_pool') },
    // The route's checks come before the room: a refused route asks for no renewal.
    {
      name: 'byok_missing with no lease: refused, no renewal',
      ...none,
      requested: 'byok',
      lease: '0.00000000',
      expected: refused('byok_missing'),
    },
  ])('$name', check);
});

describe('decideCall: the balance, the spend limits and the request id (the lease’s room)', () => {
  it.each<Row>([
    { name: 'the lease holds the worst case exactly', lease: '0.00100000', expected: platform() },
    { name: 'the lease less what is committed holds it exactly', lease: '0.50000000', committed: '0.49900000', expected: platform() },
    { name: 'short by one unit: renew for the worst case', lease: '0.50000000', committed: '0.49900001', expected: needs('0.00100000') },
    { name: 'no lease yet: renew', lease: '0.00000000', leaseEnds: -1, expected: needs('0.00100000') },
    { name: 'a lease ending before the call may: renew', leaseEnds: 25 * minute - 1, expected: needs('0.00100000') },
    { name: 'a lease ending as the call may', leaseEnds: 25 * minute, expected: platform() },
    { name: 'a release or recall under way: renew whatever the room', recalling: true, expected: needs('0.00100000') },
    { name: 'renewed, though a recall is under way: decided on the room', recalling: true, renewed: true, expected: platform() },
    {
      name: 'renewed and still short, no spend limit: the balance',
      lease: '0.00099999',
      renewed: true,
      expected: refused('insufficient_balance'),
    },
    {
      name: 'renewed and ending too soon: the balance',
      leaseEnds: 10 * minute,
      renewed: true,
      expected: refused('insufficient_balance'),
    },
    {
      name: 'renewed, short, the month’s room is what capped it',
      lease: '0.00050000',
      month: ['5.00000000', '0.00050000'],
      renewed: true,
      expected: refused('spend_limit_month', { refusedLimit: '5.00000000' }),
    },
    {
      name: 'renewed, short, the day’s room is what capped it',
      lease: '0.00050000',
      month: ['5.00000000', '3.00000000'],
      day: ['1.00000000', '0.00050000'],
      renewed: true,
      expected: refused('spend_limit_day', { refusedLimit: '1.00000000' }),
    },
    {
      name: 'renewed, both limits reached: the month is named',
      lease: '0.00050000',
      month: ['5.00000000', '0.00050000'],
      day: ['1.00000000', '0.00050000'],
      renewed: true,
      expected: refused('spend_limit_month', { refusedLimit: '5.00000000' }),
    },
    {
      name: 'renewed, short, the limits had room: the balance',
      lease: '0.00050000',
      committed: '0.00010000',
      month: ['5.00000000', '0.00110000'],
      day: ['1.00000000', '0.00110000'],
      renewed: true,
      expected: refused('insufficient_balance'),
    },
    {
      name: 'renewed, short, the room counts what is committed',
      lease: '0.00050000',
      committed: '0.00010000',
      day: ['1.00000000', '0.00100000'],
      renewed: true,
      expected: refused('spend_limit_day', { refusedLimit: '1.00000000' }),
    },
    { name: 'a limit never refuses a call the lease covers', month: ['5.00000000', '0.00000000'], expected: platform() },
    {
      name: 'byok without a fee at a spent limit',
      route: 'byok',
      lease: '0.00000000',
      month: ['5.00000000', '0.00000000'],
      expected: { outcome: 'authorized', route: 'byok', key: userKey.id, hold: '0.00000000', budget: null, boundOutputTokens: 4_000 },
    },
    { name: 'a request id claimed: conflict', claimed: 1, expected: refused('conflict') },
    { name: 'a claim that has run out', claimed: 0, expected: platform() },
    { name: 'a claim comes before the room is asked for', claimed: 1, lease: '0.00000000', expected: refused('conflict') },
    { name: 'renewed: claimed meanwhile', claimed: 1, renewed: true, expected: refused('conflict') },
    {
      name: 'renewed: short comes before a claim made meanwhile',
      claimed: 1,
      renewed: true,
      lease: '0.00000000',
      expected: refused('insufficient_balance'),
    },
  ])('$name', check);
});

describe('decideCall: requests per minute (the lease’s call slots)', () => {
  it.each<Row>([
    { name: 'a slot left', rate: { limit: 5, slots: 3, window: [] }, unrecorded: 2, expected: platform() },
    { name: 'the slots taken: renew', rate: { limit: 5, slots: 3, window: [] }, unrecorded: 3, expected: needs('0.00100000') },
    {
      name: 'renewed, the slots taken: refused, retry-after when the oldest call leaves the window',
      rate: { limit: 3, slots: 0, window: [50_000, 40_000, 30_000] },
      renewed: true,
      expected: refused('rate_limited', { refusedLimit: '3', retryAfterSeconds: 10 }),
    },
    {
      name: 'renewed: the object’s own calls count in the window',
      rate: { limit: 3, slots: 2, window: [20_000] },
      unrecorded: 2,
      callTimes: [45_000, 5_000],
      renewed: true,
      expected: refused('rate_limited', { refusedLimit: '3', retryAfterSeconds: 15 }),
    },
    {
      name: 'renewed: a call older than the window does not count',
      rate: { limit: 3, slots: 1, window: [61_000, 10_000, 5_000] },
      unrecorded: 1,
      renewed: true,
      expected: refused('rate_limited', { refusedLimit: '3', retryAfterSeconds: 1 }),
    },
    {
      name: 'renewed: a call just now: the whole minute',
      rate: { limit: 1, slots: 0, window: [0] },
      renewed: true,
      expected: refused('rate_limited', { refusedLimit: '1', retryAfterSeconds: 60 }),
    },
    {
      name: 'renewed: the window comes before the balance',
      rate: { limit: 1, slots: 0, window: [30_000] },
      lease: '0.00000000',
      renewed: true,
      expected: refused('rate_limited', { refusedLimit: '1', retryAfterSeconds: 30 }),
    },
    { name: 'renewed with a slot', rate: { limit: 3, slots: 3, window: [] }, unrecorded: 2, renewed: true, expected: platform() },
  ])('$name', check);
});

describe('decideCall: a developer key’s budget lease and the platform fallback', () => {
  it.each<Row>([
    { name: 'covered by the budget lease', route: 'developer_key', budget: roomy, expected: onKey('0.00050000') },
    {
      name: 'covered exactly, counting what the object’s calls commit',
      route: 'developer_key',
      budget: { amount: '0.00100000', committed: '0.00050000' },
      expected: onKey('0.00050000'),
    },
    {
      name: 'no budget held: renew both, the lease for the larger worst case (the platform may take it)',
      route: 'developer_key',
      expected: needs('0.00100000', '0.00050000'),
    },
    {
      name: 'no budget held, the key asked for: renew for its own worst case',
      route: 'developer_key',
      requested: 'developer_key',
      price: '0.10000000',
      expected: needs('0.00050000', '0.00050000'),
    },
    {
      name: 'short by one unit: renew',
      route: 'developer_key',
      budget: { amount: '0.00100000', committed: '0.00050001' },
      expected: needs('0.00100000', '0.00050000'),
    },
    {
      name: 'a budget lease ending before the call may: renew',
      route: 'developer_key',
      budget: { amount: '0.10000000', expiresAt: runsUntil - 1 },
      expected: needs('0.00100000', '0.00050000'),
    },
    {
      name: 'renewed for less than the call may run: no room, the platform takes it',
      route: 'developer_key',
      budget: { amount: '0.10000000', expiresAt: runsUntil - 1 },
      renewed: true,
      expected: platform('0.00100000', { budgetShort: developerKey.id }),
    },
    {
      name: 'renewed for less than the call may run, the key asked for: budget_exceeded',
      route: 'developer_key',
      requested: 'developer_key',
      budget: { amount: '0.10000000', expiresAt: runsUntil - 1 },
      renewed: true,
      expected: refused('budget_exceeded', { budgetShort: developerKey.id }),
    },
    {
      name: 'renewed, no room: the platform takes it, the key marked short',
      route: 'developer_key',
      renewed: true,
      expected: platform('0.00100000', { budgetShort: developerKey.id }),
    },
    {
      name: 'renewed, no room, the key asked for: refused, the key marked short',
      route: 'developer_key',
      requested: 'developer_key',
      renewed: true,
      expected: refused('budget_exceeded', { budgetShort: developerKey.id }),
    },
    {
      name: 'renewed, no room, no pool: refused',
      route: 'developer_key',
      pool: false,
      renewed: true,
      expected: refused('budget_exceeded', { budgetShort: developerKey.id }),
    },
    {
      name: 'renewed, no room, no platform price: refused',
      route: 'developer_key',
      platformHold: null,
      renewed: true,
      expected: refused('budget_exceeded', { budgetShort: developerKey.id }),
    },
    {
      name: 'renewed, no room, and the lease cannot hold the platform’s worst case: the balance',
      route: 'developer_key',
      lease: '0.00060000',
      renewed: true,
      expected: refused('insufficient_balance', { budgetShort: developerKey.id }),
    },
    {
      name: 'renewed, no room, claimed meanwhile: conflict',
      route: 'developer_key',
      claimed: 1,
      renewed: true,
      expected: refused('conflict', { budgetShort: developerKey.id }),
    },
    {
      name: 'renewed, the window full: refused before the budget is looked at',
      route: 'developer_key',
      rate: { limit: 1, slots: 0, window: [30_000] },
      renewed: true,
      expected: refused('rate_limited', { refusedLimit: '1', retryAfterSeconds: 30 }),
    },
    { name: 'renewed with room: on the key', route: 'developer_key', budget: roomy, renewed: true, expected: onKey('0.00050000') },
    {
      name: 'marked short a moment ago: the platform, without asking',
      route: 'developer_key',
      budget: roomy,
      budgetShort: true,
      expected: platform(),
    },
    {
      name: 'marked short, the key asked for: refused without asking',
      route: 'developer_key',
      requested: 'developer_key',
      budget: roomy,
      budgetShort: true,
      expected: refused('budget_exceeded'),
    },
    {
      name: 'marked short, the platform short too: renew for the platform alone',
      route: 'developer_key',
      lease: '0.00000000',
      budgetShort: true,
      expected: needs('0.00100000'),
    },
    {
      name: 'marked short: refused before the claim',
      route: 'developer_key',
      requested: 'developer_key',
      claimed: 1,
      budgetShort: true,
      expected: refused('budget_exceeded'),
    },
  ])('$name', check);
});

describe('the rules the decision is made of', () => {
  const budgetRoom = (amount: bigint, committed: bigint, expiresAt: number, at = 0) => ({
    now: at,
    keyBudgets: {
      k: { amount: usdFromUnits(amount), committed: usdFromUnits(committed), expiresAt },
    },
  });
  const monthStart = Date.UTC(2026, 11, 1);

  it.each([
    { name: 'room and a lease outliving the call', room: budgetRoom(1_000n, 700n, 10_000), until: 10_000, fit: 'covered' },
    { name: 'one unit short', room: budgetRoom(1_000n, 701n, 10_000), until: 10_000, fit: 'no_room' },
    { name: 'ending a moment before the call may', room: budgetRoom(1_000n, 700n, 10_000), until: 10_001, fit: 'ends_first' },
    { name: 'none held', room: { now: 0, keyBudgets: {} }, until: 0, fit: 'no_room' },
    // Granted until the next month's start (Postgres never lends further): it covers a call authorized
    // before that instant, even one that may run past it, and none after.
    {
      name: 'the month’s end, authorized before it',
      room: budgetRoom(1_000n, 0n, monthStart, monthStart - 1_000),
      until: monthStart + 600_000,
      fit: 'covered',
    },
    {
      name: 'the month’s end, authorized at it',
      room: budgetRoom(1_000n, 0n, monthStart, monthStart),
      until: monthStart + 600_000,
      fit: 'ends_first',
    },
    {
      name: 'a moment past a month’s start is no month’s end',
      room: budgetRoom(1_000n, 0n, monthStart + 1, monthStart - 1_000),
      until: monthStart + 600_000,
      fit: 'ends_first',
    },
  ])('budgetFit: $name → $fit', ({ room, until, fit }) => {
    expect(budgetFit(room, 'k', usd('0.00000300'), until)).toBe(fit);
  });

  it.each([
    { name: 'fewer calls in the window than the limit', limit: 3, window: [10_000], calls: [], seconds: 1 },
    { name: 'the oldest call leaves', limit: 2, window: [50_000, 10_000], calls: [], seconds: 10 },
    {
      name: 'more than the limit: the one whose leaving brings it below',
      limit: 2,
      window: [50_000, 40_000],
      calls: [10_000],
      seconds: 20,
    },
    { name: 'never more than 60 s', limit: 1, window: [-5_000], calls: [], seconds: 60 },
  ])('retryAfterSeconds: $name', ({ limit, window, calls, seconds }) => {
    const rate = { limit, slots: 0, windowMs: window.map((ago) => now - ago) };
    expect(retryAfterSeconds(rate, { now, callTimes: calls.map((ago) => now - ago) })).toBe(seconds);
  });

  it('leaseCovers: the worst case, the lease’s life and a call slot', () => {
    const room = roomOf({ lease: '0.00100000', rate: { limit: 5, slots: 1, window: [] } });
    expect(leaseCovers(room, usd('0.00100000'), runsUntil)).toBe(true);
    expect(leaseCovers(room, usd('0.00100001'), runsUntil)).toBe(false);
    expect(leaseCovers(room, usd('0.00100000'), now + 50 * minute + 1)).toBe(false);
    expect(leaseCovers({ ...room, unrecordedCalls: 1 }, usd('0.00100000'), runsUntil)).toBe(false);
  });
});
