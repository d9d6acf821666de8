/** Bindings every Faucet worker may receive (wrangler.toml vars, Worker secrets, Durable Objects). */
import type { MetricsObject, RateLimiterObject, WalletObjectContract } from './durable-objects.ts';
import type { TraceMessage } from './traces/trace-message.ts';
import type { WebhookMessage } from './webhooks/webhook-message.ts';

export interface Env {
  ENVIRONMENT?: string; // 'development' | 'test' | 'production'
  DATABASE_URL?: string;
  /** Local only: `host:port` of the Neon-style WebSocket proxy in front of a plain PostgreSQL. */
  DATABASE_WS_PROXY?: string;
  API_BASE_URL?: string;
  GATEWAY_BASE_URL?: string;

  ADMIN_TOKEN?: string;
  SESSION_HASH_SECRET?: string;
  SESSION_TTL_SECONDS?: string;
  PROVIDER_KEY_ENCRYPTION_KEY?: string;
  STRIPE_SECRET_KEY?: string;
  STRIPE_WEBHOOK_SECRET?: string;
  /** Platform pool keys, one per provider (workers/shared/providers/provider-catalog.ts). */
  OPENAI_API_KEY?: string;
  ANTHROPIC_API_KEY?: string;
  GEMINI_API_KEY?: string;
  MISTRAL_API_KEY?: string;
  GROQ_API_KEY?: string;
  DEEPSEEK_API_KEY?: string;
  XAI_API_KEY?: string;
  TOGETHER_API_KEY?: string;
  FIREWORKS_API_KEY?: string;
  OPENROUTER_API_KEY?: string;
  AZURE_OPENAI_API_KEY?: string;
  CUSTOM_OPENAI_API_KEY?: string;
  /** API roots of the pool's providers whose root each account names (Azure's resource, a custom endpoint). */
  /** Anthropic's host as its SDK takes it (default https://api.anthropic.com); `/v1` is appended. */
  ANTHROPIC_BASE_URL?: string;
  AZURE_OPENAI_BASE_URL?: string;
  CUSTOM_OPENAI_BASE_URL?: string;

  API_RATE_LIMIT_MAX_REQUESTS?: string;
  API_RATE_LIMIT_WINDOW_MS?: string;
  GATEWAY_RATE_LIMIT_MAX_REQUESTS?: string;
  GATEWAY_RATE_LIMIT_WINDOW_MS?: string;
  MAX_REQUEST_BODY_BYTES?: string;
  PLATFORM_MARKUP_BPS?: string;
  PLATFORM_FEE_BPS?: string;
  LOG_LEVEL?: string;
  CALL_MAX_DURATION_SECONDS?: string;
  CALL_SETTLE_GRACE_SECONDS?: string;
  UPSTREAM_DRAIN_MS?: string;
  /** How often an isolate sends its batched request counters to its metrics shard (default 1000; 0 = every request). */
  METRICS_FLUSH_INTERVAL_MS?: string;

  RATE_LIMITER?: DurableObjectNamespace<RateLimiterObject>;
  METRICS?: DurableObjectNamespace<MetricsObject>;
  /** One object per end-user wallet: authorizes calls on a lease (docs/edge.md). */
  WALLET?: DurableObjectNamespace<WalletObjectContract>;
  /** The chunk of balance a wallet object leases beyond what it needs (USD, default 1.00). */
  WALLET_LEASE_USD?: string;
  /** The part of a developer key's monthly budget a wallet object leases beyond its calls on the key (default 0.10). */
  WALLET_KEY_BUDGET_USD?: string;
  /** How long a wallet object keeps settled calls before flushing them (default 1000; 0 = book before answering). */
  WALLET_FLUSH_INTERVAL_MS?: string;
  /** Output tokens one quota step grants a call that grows its hold with the answer (docs/quota.md, default 1024). */
  QUOTA_STEP_TOKENS?: string;
  /** How far ahead of the usable grant the stream asks for the next step, in tokens (default 512). */
  QUOTA_ASK_AHEAD_TOKENS?: string;
  /** The traces queue (docs/traces.md): the gateway's wallet objects send to it, the API consumes it. */
  TRACES?: Queue<TraceMessage>;
  /** The first retry's delay of a trace delivery in seconds, doubling up to 5 minutes (default 5). */
  TRACE_RETRY_BASE_SECONDS?: string;
  /** The webhooks queue (docs/webhooks.md): relay wake-ups and deliveries; the API consumes it. */
  WEBHOOKS?: Queue<WebhookMessage>;
  /** Attempts of a delivery before it is failed (default 8). */
  WEBHOOK_MAX_ATTEMPTS?: string;
  /** The first retry's delay in seconds, doubling each time up to an hour (default 30). */
  WEBHOOK_RETRY_BASE_SECONDS?: string;

  [key: string]: unknown;
}

export type ServiceName = 'api' | 'gateway' | 'metrics';

/** Reads a non-negative integer setting, falling back when absent or malformed. */
export function intSetting(value: unknown, fallback: number): number {
  if (typeof value !== 'string' && typeof value !== 'number') return fallback;
  const parsed = Number(value);
  return Number.isSafeInteger(parsed) && parsed >= 0 ? parsed : fallback;
}

export function isProduction(env: Env): boolean {
  return env.ENVIRONMENT === 'production';
}
