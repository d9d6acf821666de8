/**
 * The one interface every provider sits behind. Adapters speak OpenAI's chat format on both sides:
 * they receive an OpenAI request (model already without its `provider:` prefix) and return an
 * OpenAI completion or chunk stream, translating to and from their upstream's own protocol.
 */
import type { ChatCompletion, ChatCompletionChunk, ChatRequest } from '../openai/chat-schemas.ts';
import type { PriceCatalog } from '#shared/rating/index.ts';
import type { FetchFunction } from '#shared/upstream/outbound-fetch.ts';

export interface ProviderCredential {
  /** Sent in the provider's auth header; null for providers that need none (mock). */
  apiKey: string | null;
  /** Root of the provider's API, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  /** Local stacks only: the loopback `host:port` this base URL may name (a fake upstream; loopback-allowance.ts). */
  allowLoopback?: string | null;
}

export interface ProviderCall {
  request: ChatRequest;
  credential: ProviderCredential;
  /**
   * The server's id of this call, sent upstream as `x-client-request-id` (OpenAI's header for a
   * caller's request id) so an upstream call can be matched with its booking (the upstream audit).
   */
  callId?: string;
  /** Aborted when the client goes away; adapters stop the upstream exchange. */
  signal?: AbortSignal;
  /**
   * The Responses surface's request as the client sent it (Faucet's own fields removed): an adapter
   * whose upstream serves the Responses API sends it there natively; every other adapter sends `request`.
   */
  responses?: Record<string, unknown>;
}

export interface ProviderAdapter {
  complete(call: ProviderCall): Promise<ChatCompletion>;
  /**
   * Resolves once the upstream has accepted the call (so refusals surface as a plain error
   * response); the chunks then arrive as the upstream sends them, the last one carrying `usage`
   * when the upstream reports it. Failures mid-stream are thrown as FaucetError.
   */
  stream(call: ProviderCall): Promise<AsyncIterable<ChatCompletionChunk>>;
}

/** What adapters need from their surroundings; nothing else reaches them. */
export interface ProviderContext {
  fetch: FetchFunction;
  upstreamTimeoutMs: number;
  /** Delay the mock provider waits before answering (MOCK_PROVIDER_LATENCY_MS). */
  mockLatencyMs: number;
  /** The catalog output caps are read through (default: the current one; GatewayDependencies). */
  priceCatalog?: PriceCatalog;
}
