import { cloudChat, cloudChatStream, type CloudChatConfig } from './cloud-chat.ts';
import { deviceIdFor, type DeviceIdStorage } from './device-id.ts';
import { FaucetError } from './errors.ts';
import { defaultRetryOptions, type RetryOptions } from './http/retry-policy.ts';
import type { RetryEvent, TransportConfig } from './http/transport.ts';
import { defaultBridgeUrl, detectBridge, diagnose, listModels } from './local/bridge-client.ts';
import { localChat, localChatStream, type LocalChatConfig } from './local/local-chat.ts';
import { flushUsageReports } from './local/report-delivery.ts';
import { UsageQueue } from './local/usage-queue.ts';
import { completionText, featureInputToMessages } from './messages.ts';
import { SessionManager, type SessionSource } from './session.ts';
import type {
  BridgeDiagnosis,
  BridgeInfo,
  BridgeModel,
  ChatCompletion,
  ChatOptions,
  ChatStreamPart,
  FeatureResult,
  FlushResult,
  RouteMode,
  Session,
  TopUpCheckout,
  TopUpStatus,
  UsageRecord,
  UsageReport,
  Wallet,
} from './types.ts';
import { getTopUp, getUsageRecord, getWallet, listUsage, startTopUp, type UserAccountConfig } from './user-account.ts';

export interface FaucetOptions {
  publicAppId: string;
  /**
   * The end user as your app knows them, sent as `external_user_id` when none of `session`,
   * `userToken` and `anonymous` is given — which `server` and `signed` apps refuse (docs/identity.md).
   */
  user?: { id: string };
  /**
   * A session from your backend, which called `POST /v1/sessions` with its developer key: return
   * that answer (or just its `session_token`). Called again when the session expires or is refused.
   */
  session?: () => Promise<string | Session>;
  /** For `signed` apps: a short-lived JWT your backend signed (sub = user, aud = app); called again on expiry. */
  userToken?: () => Promise<string>;
  /**
   * For `anonymous` apps (no accounts): the session binds to a random device id (192 bits) made on
   * first use and kept in `localStorage` (else in memory), sent as `device_id`. Pass `{ storage }`
   * to keep it elsewhere (`storage: null`: memory only). Ignored when `session` or `userToken` is given.
   */
  anonymous?: boolean | { storage?: DeviceIdStorage | null };
  /** Control API, e.g. `https://api.example.com` (sessions, wallet, usage). */
  baseUrl: string;
  /** Gateway for chat; defaults to `baseUrl`. */
  gatewayBaseUrl?: string;
  /** Local bridge; defaults to `http://127.0.0.1:17480`. */
  bridgeUrl?: string;
  /** Per attempt, until the whole answer (or a stream's first byte) arrived. Default 60 s. */
  timeoutMs?: number;
  /** Longest silence between two stream chunks. Default 30 s. */
  streamIdleTimeoutMs?: number;
  retry?: Partial<RetryOptions>;
  onRetry?: (event: RetryEvent) => void;
  /** A fetch to use instead of the global one (tests, proxies). */
  fetch?: typeof fetch;
  /** Clock for session expiry; defaults to `Date.now`. */
  now?: () => number;
}

export interface FeatureOptions {
  feature: string;
  /** Text, messages, or any JSON value (sent as one user message holding its JSON). */
  input: unknown;
  model?: string;
  routeMode?: RouteMode;
  signal?: AbortSignal;
}

export interface FaucetClient {
  readonly publicAppId: string;
  createSession(signal?: AbortSignal): Promise<Session>;
  chat(options: ChatOptions): Promise<ChatCompletion>;
  /** Text deltas as they arrive, then one `metadata` part; stop early with the signal or `break`. */
  chatStream(options: ChatOptions): AsyncIterable<ChatStreamPart>;
  runFeature(options: FeatureOptions): Promise<FeatureResult>;
  getWallet(signal?: AbortSignal): Promise<Wallet>;
  listUsage(options?: { limit?: number; signal?: AbortSignal }): Promise<UsageRecord[]>;
  /** The booked usage record of one call by its `faucet.request_id`; undefined until it is booked. */
  getUsageRecord(requestId: string, signal?: AbortSignal): Promise<UsageRecord | undefined>;
  /**
   * Starts a Stripe Checkout top-up of the user's wallet (`amountUsd`: whole cents, e.g. `"10.00000000"`);
   * send the user to the answer's `url`. Stripe returns them to `returnUrl` with `?checkout=success|cancelled`.
   */
  startTopUp(options: { amountUsd: string; returnUrl?: string; signal?: AbortSignal }): Promise<TopUpCheckout>;
  /** A started top-up: `completed` once the payment was confirmed and the wallet credited. */
  getTopUp(checkoutSessionId: string, signal?: AbortSignal): Promise<TopUpStatus>;
  local: {
    detectBridge(signal?: AbortSignal): Promise<BridgeInfo>;
    listModels(signal?: AbortSignal): Promise<BridgeModel[]>;
    diagnose(signal?: AbortSignal): Promise<BridgeDiagnosis>;
    pendingUsageReports(): UsageReport[];
    flushUsageReports(): Promise<FlushResult>;
  };
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

function requireText(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') throw new FaucetError('invalid_request', `${name} is required`);
  return value;
}

/** The first of `session`, `userToken`, `anonymous` and `user` the options give. */
export function sessionSource(options: FaucetOptions, publicAppId: string): SessionSource {
  if (options.session) return { kind: 'backend', session: options.session };
  if (options.userToken) return { kind: 'user-token', userToken: options.userToken };
  if (options.anonymous) {
    // An absent storage means the page's localStorage; an explicit null, memory only.
    const storage = typeof options.anonymous === 'object' ? options.anonymous.storage : undefined;
    return { kind: 'device', deviceId: deviceIdFor(publicAppId, storage) };
  }
  return { kind: 'user-id', userId: requireText(options.user?.id, 'user.id (or session, userToken or anonymous)') };
}

export function createFaucet(options: FaucetOptions): FaucetClient {
  const publicAppId = requireText(options.publicAppId, 'publicAppId');
  const source = sessionSource(options, publicAppId);
  const baseUrl = trimSlash(requireText(options.baseUrl, 'baseUrl'));
  const gatewayBaseUrl = trimSlash(options.gatewayBaseUrl ?? baseUrl);
  const bridgeUrl = trimSlash(options.bridgeUrl ?? defaultBridgeUrl);
  const fetchImpl = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
  const transport: TransportConfig = {
    fetch: fetchImpl,
    timeoutMs: options.timeoutMs ?? 60_000,
    streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? 30_000,
    retry: { ...defaultRetryOptions, ...options.retry },
    onRetry: options.onRetry,
  };
  const sessions = new SessionManager({ transport, baseUrl, publicAppId, source, now: options.now ?? Date.now });
  const queue = new UsageQueue();
  const cloud: CloudChatConfig = { transport, gatewayBaseUrl, sessions };
  const local: LocalChatConfig = { transport, bridgeUrl, sessions, queue, publicAppId };
  const account: UserAccountConfig = { transport, baseUrl, sessions };

  const chat = (chatOptions: ChatOptions) =>
    chatOptions.routeMode === 'local' ? localChat(local, chatOptions) : cloudChat(cloud, chatOptions);

  return {
    publicAppId,
    createSession: (signal) => sessions.create(signal),
    chat,
    chatStream: (chatOptions) =>
      chatOptions.routeMode === 'local' ? localChatStream(local, chatOptions) : cloudChatStream(cloud, chatOptions),
    async runFeature({ feature, input, model, routeMode, signal }) {
      const completion = await chat({ feature, input: featureInputToMessages(input), model, routeMode, signal });
      const { input_tokens, output_tokens, estimated } = completion.faucet;
      return { text: completionText(completion), usage: { input_tokens, output_tokens, estimated }, faucet: completion.faucet };
    },
    getWallet: (signal) => getWallet(account, signal),
    listUsage: (listOptions) => listUsage(account, listOptions),
    getUsageRecord: (requestId, signal) => getUsageRecord(account, requestId, signal),
    startTopUp: (topUpOptions) => startTopUp(account, topUpOptions),
    getTopUp: (checkoutSessionId, signal) => getTopUp(account, checkoutSessionId, signal),
    local: {
      detectBridge: (signal) => detectBridge(local, signal),
      listModels: (signal) => listModels(local, signal),
      diagnose: (signal) => diagnose(local, signal),
      pendingUsageReports: () => queue.list(),
      flushUsageReports: () => flushUsageReports(local),
    },
  };
}
