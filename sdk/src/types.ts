/** Wire shapes of the Faucet API as the SDK returns them. Money is always an 8-digit decimal string. */

export type RouteMode = 'platform' | 'developer_key' | 'byok' | 'local';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  name?: string;
}

/** A plain string (one user message), a list of messages, or `{ messages }`. */
export type ChatInput = string | ChatMessage[] | { messages: ChatMessage[] };

export interface ChatOptions {
  feature: string;
  input: ChatInput;
  /** `provider:model`, e.g. `mock:echo`; for `local`, the bridge's model id (a `provider:` prefix is allowed). */
  model?: string;
  routeMode?: RouteMode;
  temperature?: number;
  maxTokens?: number;
  signal?: AbortSignal;
}

export interface FaucetCharge {
  currency: 'USD';
  amount_usd: string;
  upstream_cost_usd: string;
}

/**
 * How the usage report of a local call fared: `accepted` by the bridge, `queued` in the SDK's memory
 * until `local.flushUsageReports()` delivers it, or `rejected` by the bridge as invalid (not retried).
 */
export type UsageReportStatus = 'accepted' | 'queued' | 'rejected';

export interface FaucetMetadata {
  request_id: string;
  /** The app's feature the call used: the one it named, or the app's default. */
  feature?: string;
  route_mode: RouteMode;
  provider: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  estimated: boolean;
  charge?: FaucetCharge;
  /** Only for `local` calls. */
  usage_report_status?: UsageReportStatus;
  /**
   * Set when the answer was ended because the money for its next part ran out (the balance, a spend
   * limit, the developer key's budget) or could not be had; it ended as at its max tokens. Offer a top-up.
   */
  cut_reason?: 'insufficient_balance' | 'spend_limit_month' | 'spend_limit_day' | 'budget_exceeded' | 'quota_unavailable';
  /** What the gateway tried, in order, when the feature has fallbacks or an attempt failed. */
  attempts?: FaucetCallAttempt[];
}

/** One upstream attempt of a call; the last `ok` one answered and is the one billed. */
export interface FaucetCallAttempt {
  model: string;
  provider: string;
  outcome: 'ok' | 'error' | 'skipped_circuit_open' | 'skipped_no_route';
  status?: number;
  error_code?: string;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: 'assistant'; content: string | null };
    finish_reason: string | null;
  }>;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  faucet: FaucetMetadata;
}

export type ChatStreamPart = { type: 'delta'; delta: string } | { type: 'metadata'; faucet: FaucetMetadata };

export interface FeatureResult {
  text: string;
  usage: { input_tokens: number; output_tokens: number; estimated: boolean };
  faucet: FaucetMetadata;
}

export interface Session {
  session_token: string;
  token_type: 'Bearer';
  expires_at: string;
  /** Names the session for revocation by the developer; not a credential. */
  session_id?: string;
  /** Opaque reference of the end user, sent in local usage reports instead of any hash of the user id. */
  user_ref?: string;
}

export interface Wallet {
  wallet_id: string;
  currency: 'USD';
  balance_usd: string;
  held_usd: string;
  available_usd: string;
}

export interface UsageRecord {
  request_id: string;
  feature_key: string;
  route_mode: RouteMode;
  provider: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  estimated: boolean;
  charged_usd: string;
  created_at: string;
}

/** A Stripe Checkout started for the user's wallet: send the user to `url`. */
export interface TopUpCheckout {
  checkout_session_id: string;
  url: string;
  amount_usd: string;
  amount_cents: number;
  currency: 'USD';
  status: 'pending';
  expires_at: string | null;
}

/** A top-up as the server knows it: `completed` once Stripe's webhook credited the wallet. */
export interface TopUpStatus {
  checkout_session_id: string;
  amount_usd: string;
  amount_cents: number;
  currency: 'USD';
  status: 'pending' | 'completed' | 'expired';
  created_at: string;
  completed_at: string | null;
}

/** What the SDK sends to the bridge after a local call: counts and identifiers, never content. */
export interface UsageReport {
  request_id: string;
  public_app_id: string;
  user_id_hash: string;
  feature?: string;
  route_mode: 'local';
  provider: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  estimated: boolean;
  occurred_at: string;
}

export interface BridgeInfo {
  available: boolean;
  url: string;
  version?: string;
}

export interface BridgeModel {
  id: string;
  provider: string;
  owned_by?: string;
}

export interface BridgeDiagnosis {
  available: boolean;
  /** Human-readable reasons local calls would fail; empty when everything looks fine. */
  problems: string[];
  diagnostics?: {
    bound_address: string;
    loopback: boolean;
    upstream: { url: string; kind: string; reachable: boolean; reason?: string };
    outbox: { pending: number };
  };
}

export interface FlushResult {
  sent: number;
  /** Reports the bridge refused as invalid; they are not retried. */
  dropped: number;
  pending: number;
}
