/**
 * The operator's webhook replay (`npm run webhook:replay`, docs/payments.md): posts one signed
 * `checkout.session.completed` for a checkout session to the service's Stripe webhook and reports
 * whether it credited. Inputs come from the environment only; every refusal happens before any request.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnvFile } from './dev-vars.ts';
import { checkoutSessionEvent, randomStripeId, signStripePayload } from './stripe-events.ts';

export const DEFAULT_SERVICE_API_BASE_URL = 'http://127.0.0.1:8787';

/** Exit codes of the tool. */
export const ReplayExit = {
  /** The webhook acknowledged the event (and credited it, when REQUIRE_WEBHOOK_CREDIT=1). */
  ok: 0,
  /** Acknowledged, but nothing was credited although REQUIRE_WEBHOOK_CREDIT=1. */
  notCredited: 1,
  /** Missing or invalid input, or a non-local target without ALLOW_REMOTE_WEBHOOK_REPLAY=1: nothing was sent. */
  invalidInput: 2,
  /** The service answered with an error (e.g. 400: the signature was refused). */
  refused: 3,
  /** The service could not be reached. */
  unreachable: 4,
} as const;

export interface ReplayResult {
  exitCode: (typeof ReplayExit)[keyof typeof ReplayExit];
  message: string;
}

type Env = Record<string, string | undefined>;

const LOOPBACK_HOSTS = /^(localhost|[a-z0-9-]+\.localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

export function isLocalTarget(url: URL): boolean {
  return LOOPBACK_HOSTS.test(url.hostname);
}

function flag(env: Env, name: string): boolean | undefined {
  const value = env[name];
  if (value === undefined || value === '' || value === '0') return false;
  return value === '1' ? true : undefined;
}

function invalid(message: string): ReplayResult {
  return { exitCode: ReplayExit.invalidInput, message };
}

/** The local stack's webhook secret from `.dev.vars`, for local targets when none is given. */
function localWebhookSecret(repoRoot: string): string | undefined {
  const path = join(repoRoot, '.dev.vars');
  return existsSync(path) ? parseEnvFile(readFileSync(path, 'utf8')).STRIPE_WEBHOOK_SECRET : undefined;
}

export async function replayWebhook(env: Env, options: { repoRoot: string }): Promise<ReplayResult> {
  const base = env.SERVICE_API_BASE_URL || DEFAULT_SERVICE_API_BASE_URL;
  if (!URL.canParse(base) || !/^https?:$/.test(new URL(base).protocol))
    return invalid(`SERVICE_API_BASE_URL is not an http(s) URL: ${base}`);
  const target = new URL(base);
  const allowRemote = flag(env, 'ALLOW_REMOTE_WEBHOOK_REPLAY');
  const requireCredit = flag(env, 'REQUIRE_WEBHOOK_CREDIT');
  if (allowRemote === undefined) return invalid('ALLOW_REMOTE_WEBHOOK_REPLAY must be 1 or unset');
  if (requireCredit === undefined) return invalid('REQUIRE_WEBHOOK_CREDIT must be 1 or unset');
  const local = isLocalTarget(target);
  if (!local && !allowRemote) {
    return invalid(`refusing to replay to the non-local target ${target.origin}; set ALLOW_REMOTE_WEBHOOK_REPLAY=1 to allow it`);
  }

  const sessionId = env.PAYMENT_CHECKOUT_SESSION_ID ?? '';
  if (!sessionId) return invalid('PAYMENT_CHECKOUT_SESSION_ID is required (the cs_… id the checkout endpoint returned)');
  if (!/^cs_[A-Za-z0-9_]{1,250}$/.test(sessionId)) return invalid('PAYMENT_CHECKOUT_SESSION_ID must look like cs_…');
  const amountText = env.PAYMENT_AMOUNT_CENTS ?? '';
  if (!/^\d{1,9}$/.test(amountText) || Number(amountText) === 0) {
    return invalid('PAYMENT_AMOUNT_CENTS is required: a positive whole number of cents, e.g. 2500 for 25.00 USD');
  }
  const secret = env.PAYMENT_WEBHOOK_SECRET || (local ? localWebhookSecret(options.repoRoot) : undefined);
  if (!secret) {
    return invalid(
      local
        ? 'PAYMENT_WEBHOOK_SECRET is not set and .dev.vars has no STRIPE_WEBHOOK_SECRET'
        : 'PAYMENT_WEBHOOK_SECRET is required for a non-local target',
    );
  }

  const event = checkoutSessionEvent({ id: sessionId, amount_total: Number(amountText) }, { eventId: randomStripeId('evt_replay') });
  const payload = JSON.stringify(event);
  const url = new URL('/v1/webhooks/stripe', target).toString();
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': await signStripePayload(payload, secret) },
      body: payload,
      signal: AbortSignal.timeout(15_000),
    });
  } catch (error) {
    return { exitCode: ReplayExit.unreachable, message: `could not reach ${url}: ${(error as Error).message}` };
  }
  const text = await response.text();
  let body: { credited?: unknown; outcome?: unknown; error?: { code?: unknown; message?: unknown } } = {};
  try {
    body = JSON.parse(text);
  } catch {
    // Reported below as an unexpected answer.
  }
  if (!response.ok) {
    const reason = body.error ? `${String(body.error.code)}: ${String(body.error.message)}` : text.slice(0, 200);
    return { exitCode: ReplayExit.refused, message: `the webhook refused event ${event.id} with HTTP ${response.status} (${reason})` };
  }
  if (typeof body.credited !== 'boolean') {
    return { exitCode: ReplayExit.refused, message: `unexpected answer from ${url} (HTTP ${response.status}): ${text.slice(0, 200)}` };
  }
  const outcome = typeof body.outcome === 'string' ? body.outcome : 'unknown';
  if (body.credited) {
    return { exitCode: ReplayExit.ok, message: `credited: event ${event.id} credited checkout session ${sessionId} (${amountText} cents)` };
  }
  const summary = `not credited: event ${event.id} for checkout session ${sessionId} was acknowledged without a credit (${outcome})`;
  return requireCredit
    ? { exitCode: ReplayExit.notCredited, message: `${summary}; failing because REQUIRE_WEBHOOK_CREDIT=1` }
    : { exitCode: ReplayExit.ok, message: summary };
}
