/**
 * The one place a Stripe client is built: the official `stripe` package with the fetch HTTP client,
 * test mode only unless production deliberately allows live keys, and `STRIPE_API_HOST`/`_PORT`/
 * `_PROTOCOL` to point it at the local fake (tests, offline `npm start`).
 */
import Stripe from 'stripe';
import type { Env } from '#shared/env.ts';
import { FaucetError } from '#shared/wire/errors.ts';

export type StripeMode = 'test' | 'live';

/** Live keys are accepted only with ENVIRONMENT=production and STRIPE_ALLOW_LIVE_KEYS=1. */
export function liveModeAllowed(env: Env): boolean {
  return env.ENVIRONMENT === 'production' && env.STRIPE_ALLOW_LIVE_KEYS === '1';
}

/** The configured secret key's mode, refusing a live key unless allowed; never echoes the key. */
export function stripeSecretKey(env: Env): { key: string; mode: StripeMode } {
  const key = env.STRIPE_SECRET_KEY;
  if (!key) throw new FaucetError('internal_error', 'Payments are not configured');
  const mode = /^(sk|rk)_test_/.test(key) ? 'test' : /^(sk|rk)_live_/.test(key) ? 'live' : undefined;
  if (!mode) throw new FaucetError('internal_error', 'The Stripe secret key is malformed');
  if (mode === 'live' && !liveModeAllowed(env)) {
    throw new FaucetError('forbidden', 'Live Stripe payments are disabled on this deployment (test mode only)');
  }
  return { key, mode };
}

function apiTarget(env: Env): Pick<Stripe.StripeConfig, 'host' | 'port' | 'protocol'> {
  const host = typeof env.STRIPE_API_HOST === 'string' && env.STRIPE_API_HOST ? env.STRIPE_API_HOST : undefined;
  if (!host) return {};
  const protocol = env.STRIPE_API_PROTOCOL === 'http' ? 'http' : 'https';
  const port = typeof env.STRIPE_API_PORT === 'string' && /^\d{1,5}$/.test(env.STRIPE_API_PORT) ? Number(env.STRIPE_API_PORT) : undefined;
  return { host, protocol, ...(port ? { port } : {}) };
}

export function createStripeClient(env: Env): Stripe {
  const { key } = stripeSecretKey(env);
  return new Stripe(key, {
    httpClient: Stripe.createFetchHttpClient(),
    maxNetworkRetries: 1,
    timeout: 10_000,
    ...apiTarget(env),
  });
}

/** Verified event from the raw body, or `invalid_request` (400) for a missing or bad signature. */
export async function verifyStripeEvent(env: Env, rawBody: string, signature: string | undefined): Promise<Stripe.Event> {
  const secret = env.STRIPE_WEBHOOK_SECRET;
  if (!secret) throw new FaucetError('internal_error', 'Payments are not configured');
  if (!signature) throw new FaucetError('invalid_request', 'Missing stripe-signature header');
  try {
    return await Stripe.webhooks.constructEventAsync(rawBody, signature, secret, 300, Stripe.createSubtleCryptoProvider());
  } catch (error) {
    throw new FaucetError('invalid_request', 'Invalid Stripe signature', { cause: error });
  }
}
