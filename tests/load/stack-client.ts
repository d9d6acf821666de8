/**
 * The calls the reliability suites make against a running stack, over real HTTP: sessions, gateway
 * calls (plain and streamed, each with a client-chosen request id), Stripe top-ups through the
 * checkout + signed webhook path, admin operations and the ledger reconciliation.
 */
import { checkoutSessionEvent, signStripePayload } from '../../scripts/lib/stripe-events.ts';

export interface StackTarget {
  apiUrl: string;
  gatewayUrl: string;
  publicAppId: string;
  featureKey: string;
  adminToken: string;
  /** The demo developer's key: sessions are minted as the app's backend mints them (the demo app's policy is `server`). */
  developerKey?: string;
}

/** What one HTTP call came to: status, error code (when an error), and the body when JSON. */
export interface Outcome {
  status: number;
  code: string | null;
  body: unknown;
  requestId: string | null;
  /** The `retry-after` header, when the answer had one (429, 503 `unavailable`). */
  retryAfter: string | null;
}

async function outcomeOf(response: Response): Promise<Outcome> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (CSV, SSE): keep the text.
  }
  const code = response.status >= 400 ? ((body as { error?: { code?: string } })?.error?.code ?? 'no_envelope') : null;
  return {
    status: response.status,
    code,
    body,
    requestId: response.headers.get('x-request-id'),
    retryAfter: response.headers.get('retry-after'),
  };
}

export async function request(
  url: string,
  options: { method?: string; token?: string; json?: unknown; headers?: Record<string, string>; body?: string } = {},
): Promise<Outcome> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body = options.body;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  const response = await fetch(url, { method: options.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  return outcomeOf(response);
}

export async function createSession(target: StackTarget, externalUserId: string): Promise<string> {
  const outcome = await request(`${target.apiUrl}/v1/sessions`, {
    json: { public_app_id: target.publicAppId, external_user_id: externalUserId },
    token: target.developerKey,
  });
  if (outcome.status !== 201) throw new Error(`session: ${outcome.status} ${outcome.code}`);
  return (outcome.body as { session_token: string }).session_token;
}

export interface WalletView {
  wallet_id: string;
  balance_usd: string;
  held_usd: string;
  available_usd: string;
}

export async function userWallet(target: StackTarget, token: string): Promise<WalletView> {
  const outcome = await request(`${target.apiUrl}/v1/user/wallet`, { token });
  if (outcome.status !== 200) throw new Error(`wallet: ${outcome.status} ${outcome.code}`);
  return outcome.body as WalletView;
}

export interface ChatResult extends Outcome {
  /** `faucet.charge.amount_usd` of a successful call (plain body or the stream's usage event). */
  chargedUsd: string | null;
  /** A stream that answered 200 but ended without the usage event and `[DONE]`. */
  streamIncomplete: boolean;
}

/** One `mock:echo` call through the gateway with the given request id. */
export async function chat(
  target: StackTarget,
  token: string,
  requestId: string,
  options: { stream: boolean; text: string },
): Promise<ChatResult> {
  const response = await fetch(`${target.gatewayUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': requestId },
    body: JSON.stringify({
      model: 'mock:echo',
      feature: target.featureKey,
      max_tokens: 32,
      stream: options.stream,
      messages: [{ role: 'user', content: options.text }],
    }),
  });
  if (!options.stream || response.status !== 200) {
    const outcome = await outcomeOf(response);
    const charged = (outcome.body as { faucet?: { charge?: { amount_usd?: string } } })?.faucet?.charge?.amount_usd ?? null;
    return { ...outcome, chargedUsd: outcome.status === 200 ? charged : null, streamIncomplete: false };
  }
  const text = await response.text();
  const events = text
    .split(/\n\n/)
    .map((event) => event.trim())
    .filter((event) => event.startsWith('data: '))
    .map((event) => event.slice('data: '.length));
  const usage = events
    .filter((data) => data !== '[DONE]')
    .map((data) => JSON.parse(data) as { object?: string; faucet?: { charge?: { amount_usd?: string } } })
    .find((event) => event.object === 'faucet.usage');
  const complete = usage !== undefined && events.at(-1) === '[DONE]';
  return {
    status: 200,
    code: complete ? null : 'stream_incomplete',
    body: null,
    requestId: response.headers.get('x-request-id'),
    retryAfter: null,
    chargedUsd: usage?.faucet?.charge?.amount_usd ?? null,
    streamIncomplete: !complete,
  };
}

/** Stripe-signed delivery of an event to the API's webhook. */
export async function deliverWebhook(target: StackTarget, webhookSecret: string, event: unknown): Promise<Outcome> {
  const payload = JSON.stringify(event);
  return request(`${target.apiUrl}/v1/webhooks/stripe`, {
    body: payload,
    headers: { 'content-type': 'application/json', 'stripe-signature': await signStripePayload(payload, webhookSecret) },
  });
}

export interface CheckoutStarted {
  outcome: Outcome;
  sessionId: string | null;
  amountCents: number;
}

/** Starts a checkout top-up for the session user (the API asks the Stripe fake for a session). */
export async function startCheckout(target: StackTarget, token: string, amountUsd: string): Promise<CheckoutStarted> {
  const outcome = await request(`${target.apiUrl}/v1/user/stripe/checkout-sessions`, { token, json: { amount_usd: amountUsd } });
  const body = outcome.body as { checkout_session_id?: string; amount_cents?: number };
  return { outcome, sessionId: outcome.status === 201 ? (body.checkout_session_id ?? null) : null, amountCents: body.amount_cents ?? 0 };
}

/** The `checkout.session.completed` event Stripe sends for a paid session. */
export function paidCheckoutEvent(sessionId: string, amountCents: number, eventId?: string) {
  return checkoutSessionEvent({ id: sessionId, amount_total: amountCents }, eventId ? { eventId } : {});
}

export async function admin(target: StackTarget, path: string, options: { method?: string; json?: unknown } = {}): Promise<Outcome> {
  return request(`${target.apiUrl}${path}`, { ...options, token: target.adminToken });
}

export interface Reconciliation {
  ok: boolean;
  counts: { wallets: number; transactions: number; entries: number };
  wallet_mismatches: unknown[];
  unbalanced_transactions: unknown[];
  negative_wallets: unknown[];
}

/** Every leasing wallet object books what it settled; answers how many calls they still hold unflushed. */
export async function flushWallets(
  target: StackTarget,
): Promise<{ unflushed_calls: number; in_flight_calls: number; refused_calls: number; unreachable: number }> {
  // A streamed call is settled after its last chunk reached the client: flushed once it has been.
  for (let attempt = 0; ; attempt++) {
    const outcome = await admin(target, '/v1/admin/wallets/flush', { method: 'POST' });
    if (outcome.status !== 200) throw new Error(`wallet flush: ${outcome.status} ${outcome.code}`);
    const held = outcome.body as { unflushed_calls: number; in_flight_calls: number; refused_calls: number; unreachable: number };
    if ((held.in_flight_calls === 0 && held.unflushed_calls === 0) || attempt >= 50) return held;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Reconciliation asked every `intervalMs` until stopped (the books agree with themselves at
 * any instant of a load run, not only at its end); answers each report's `ok`, the most unflushed
 * seen, and when (`performance.now()`) a report could not be had (the database down).
 */
export function sampleReconciliation(target: StackTarget, intervalMs = 250) {
  const samples: boolean[] = [];
  const unanswered: number[] = [];
  let unflushedSeen = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const asked = performance.now();
      try {
        const report = (await reconciliation(target)) as Reconciliation & { wallet_objects?: { unflushed_calls: number } };
        samples.push(report.ok);
        unflushedSeen = Math.max(unflushedSeen, report.wallet_objects?.unflushed_calls ?? 0);
      } catch {
        unanswered.push(asked);
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { samples, unanswered, unflushedSeen };
    },
  };
}

export async function reconciliation(target: StackTarget): Promise<Reconciliation> {
  const outcome = await admin(target, '/v1/admin/reconciliation/ledger');
  if (outcome.status !== 200) throw new Error(`reconciliation: ${outcome.status} ${outcome.code}`);
  return outcome.body as Reconciliation;
}
