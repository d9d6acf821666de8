/**
 * The contracts of Faucet's Durable Objects, as their callers see them: the metrics worker's rate
 * limiter and metrics aggregator (bound by `script_name`), and the gateway's wallet object, which the
 * API tells of recalls, revocations and key changes. The objects implement these; shared code knows
 * only the contract, never the worker.
 */
import type { LeasedRoute, StoredKey } from './wallet/lease-context.ts';
import type { CallRefusal } from './authorize/decide-call.ts';
import type { QuotaRefusal } from './authorize/quota-steps.ts';
import type { CallLogFacts, CallSurface } from './calls/call-log.ts';

export interface WindowDecision {
  allowed: boolean;
  remaining: number;
  /** Epoch milliseconds at which the current window ends. */
  resetAtMs: number;
}

/** One request's sample, as the `observe` middleware takes it. */
export interface RequestSample {
  service: string;
  method: string;
  route: string;
  status: number;
  durationMs: number;
  rateLimited: boolean;
}

/** The counters of one series (service, method, route pattern, status), summed over many requests. */
export interface SeriesCounts {
  service: string;
  method: string;
  route: string;
  status: string;
  requests: number;
  durationMsSum: number;
  rateLimited: number;
}

export interface RateLimiterObject extends Rpc.DurableObjectBranded {
  hit(limit: number, windowMs: number): Promise<WindowDecision>;
}

/**
 * One shard of the request counters (workers/shared/request-counters/shards.ts). Workers add their isolate's
 * batched counts to a shard; `/metrics` sums every shard's series.
 */
export interface MetricsObject extends Rpc.DurableObjectBranded {
  record(batch: SeriesCounts[]): Promise<void>;
  series(service?: string): Promise<SeriesCounts[]>;
}

/** What the gateway asks a wallet object for one call (workers/gateway/src/wallet/, docs/edge.md). */
export interface WalletCallRequest {
  /** The object's name (from the token): the object checks it against the session's end user. */
  wallet: string;
  /**
   * Settlements of this wallet's earlier calls answered in the gateway's isolate and not sent yet
   * ([call id, settlement]): the object takes them before it judges this call and answers only once
   * they are durable, so they need no message of their own (wallet/unsent-settlements.ts).
   */
  settlements?: [string, WalletSettlement][];
  /** How the request log names the call should it be refused: the API it came by, the model it named. */
  log?: { surface: CallSurface; requestedModel: string; stream: boolean };
  tokenHash: string;
  /** Null: the app's default feature. */
  featureKey: string | null;
  requestedRoute: 'platform' | 'developer_key' | 'byok' | null;
  provider: string;
  model: string;
  /** The alias the call named and the fallbacks its hold was sized over (faucet_call_context refuses other ones: `routing_changed`). */
  alias: string | null;
  fallbacks: string[];
  /** The call's worst-case retail on the platform route (8-decimal USD); null: the model has no platform price. */
  platformHold: string | null;
  /**
   * The call's worst-case upstream cost at catalog price (8-decimal USD): on the developer_key route
   * what it reserves of the key's budget, and its hold without a developer price; null: unpriced.
   */
  catalogCost: string | null;
  poolAvailable: boolean;
  call: {
    id: string;
    moneyKey: string;
    clientRequestId: string;
    fingerprint: string;
    boundInputTokens: number;
    boundOutputTokens: number;
    maxDurationSeconds: number;
    platformMarkupBps: number;
    platformFeeBps: number;
    /** When the call was authorized (epoch ms): its price period and its record's time. */
    authorizedAt: number;
    /** Every candidate's bounds, for booking the call at its worst case if it is never settled. */
    candidates: Array<{ provider: string; model: string; boundInputTokens: number; boundOutputTokens: number }>;
    /** The longest lifetime of the prompt's cache breakpoints: its input is booked at that write price at its bound. */
    cacheLifetime?: '5m' | '1h' | null;
  };
  /** Tests only (ENVIRONMENT=test): the database of the test file, which the object's own environment cannot name. */
  databaseUrl?: string;
}

/**
 * The object's answer: authorized on its lease, refused, `routing_changed` (ask again with these), or
 * `unavailable`: the call needed Postgres (a context, a lease) and it could not be reached.
 */
export type WalletCallDecision =
  | {
      outcome: 'authorized';
      appId: string;
      endUserId: string;
      featureKey: string;
      developerShareBps: number | null;
      developerPricePerMtokUsd: string | null;
      openFeeUsd: string | null;
      maxOutputTokens: number | null;
      routing: { aliases: Record<string, string>; fallbacks: string[] };
      /** The route: the platform pool, the end user's own key or the developer's (still encrypted; the gateway opens it). */
      routeMode: LeasedRoute;
      routeKey: StoredKey | null;
      /** On the byok route: the end user's key of each other fallback provider. */
      fallbackKeys: Record<string, { id: string; ciphertext: string; iv: string; key_version: number }>;
    }
  | { outcome: 'unavailable' }
  | { outcome: 'routing_changed'; routing: { aliases: Record<string, string>; fallbacks: string[] } }
  | {
      outcome: 'refused';
      refusal: Exclude<CallRefusal, 'routing_changed'>;
      featureKey: string | null;
      /** On a limit's refusal: the limit the message names (8-decimal USD, or calls per minute). */
      refusedLimit?: string;
      /** On `rate_limited`: seconds until a call leaves the window. */
      retryAfterSeconds?: number;
    };

/**
 * How long the gateway holds an answered call's settlement for a later call of its wallet from the same
 * isolate to carry in its `authorize` (wallet/unsent-settlements.ts) before sending it on its own.
 */
export const settlementGraceMs = 10;

/**
 * How long a read of an end user's own calls lets their wallet object wait for settlements still on
 * their way (`flush(settlingMs)`): a few times the gateway's grace, so a call answered just before the
 * read is in it.
 */
export const readSettlingMs = 5 * settlementGraceMs;

/** A settled call as the object stores and flushes it: the booking (faucet_usage_booking as JSON) and its retail. */
export interface WalletSettlement {
  booking: Record<string, unknown>;
  /** 8-decimal USD: what the booking charges, counted against the lease until it is flushed. */
  retailUsd: string;
  /** How the call went, for the request log (written with the booking). */
  log?: CallLogFacts;
}

/**
 * One quota step of a call in flight (docs/quota.md): its output bound grows to `outputTokens`, held at
 * the answering model's prices for the input and that much output (8-decimal USD, as `authorize`'s).
 */
export interface WalletQuotaStep {
  outputTokens: number;
  platformHold: string | null;
  catalogCost: string | null;
  /** The model that answers: a call never settled is booked at its bound at this grant. */
  candidate: { provider: string; model: string; boundInputTokens: number };
}

export type WalletQuotaAnswer =
  | { outcome: 'granted' }
  | { outcome: 'refused'; code: QuotaRefusal | 'not_in_flight'; refusedLimit?: string }
  | { outcome: 'unavailable' };

/** What one wallet object holds right now (tests, the benchmark, operators). */
export interface WalletSnapshot {
  leaseUsd: string;
  leaseExpiresAt: number | null;
  /** In-flight worst cases plus settled, unflushed retail. */
  committedUsd: string;
  inFlight: number;
  unflushed: number;
  /** The retail of the settled, unflushed calls: charged to the user, not yet in the ledger. */
  unflushedUsd: string;
  /** Settlements Postgres refused (none by construction; kept, never dropped). */
  refused: number;
  /** Postgres statements this instance of the object has run since it started. */
  statements: number;
  /** Each developer key's budget lease: what it holds, and what the object's calls on the key commit of it. */
  keyBudgets: Record<string, { leaseUsd: string; committedUsd: string }>;
}

export interface WalletObjectContract extends Rpc.DurableObjectBranded {
  authorize(request: WalletCallRequest): Promise<WalletCallDecision>;
  /** Grows a call's hold by one quota step, on the lease (renewed once when short): granted, or refused (the answer ends). */
  extend(callId: string, step: WalletQuotaStep): Promise<WalletQuotaAnswer>;
  settle(callId: string, settlement: WalletSettlement): Promise<void>;
  /** The upstream never accepted the call: nothing is charged and its request id is free again. */
  /** `log`: how the call went, for the request log (the object writes it with its next flush). */
  abandon(callId: string, log?: CallLogFacts): Promise<void>;
  /** Refuses these sessions from now on (null: every session of this wallet); the API pushes revocations. */
  revokeSessions(tokenHashes: string[] | null): Promise<void>;
  /** The keys its calls may take changed (the end user's byok key added or disabled, a developer key disabled): the routing is read again. */
  forgetContexts(): Promise<void>;
  /**
   * Before money leaves the wallet outside the gateway (a debit adjustment, a chargeback): books
   * every settled call and gives back all of the lease but the worst cases of calls in flight, and
   * takes no new lease until `resume` (or 3 s): a call racing the debit waits for it.
   */
  recall(): Promise<WalletSnapshot>;
  /** The debit a recall preceded is written: new leases may be taken again (else after 3 s). */
  resume(): Promise<void>;
  /**
   * Books every settled call now (the alarm does it on its own). A failed flush wrote nothing and is
   * retried by the alarm; `error` names why (a SQLSTATE, or `unreachable`), never with the data sent.
   * `settlingMs` (a read of the end user's own calls): while calls are in flight, first waits up to that
   * long for their settlements — a call answered a moment ago may still have its settlement on the way
   * (the gateway holds it briefly for the wallet's next call to carry).
   */
  flush(settlingMs?: number): Promise<WalletSnapshot & { error: string | null }>;
  snapshot(): Promise<WalletSnapshot>;
}
