/** The session user's own account: wallet, usage (a list or one call's receipt) and Stripe top-ups. */
import { newRequestId } from './ids.ts';
import { requestJson, type TransportConfig } from './http/transport.ts';
import type { SessionManager } from './session.ts';
import type { TopUpCheckout, TopUpStatus, UsageRecord, Wallet } from './types.ts';

export interface UserAccountConfig {
  transport: TransportConfig;
  baseUrl: string;
  sessions: SessionManager;
}

export function getWallet(config: UserAccountConfig, signal?: AbortSignal): Promise<Wallet> {
  return config.sessions.withToken(
    (authorization) =>
      requestJson<Wallet>(config.transport, {
        method: 'GET',
        url: `${config.baseUrl}/v1/user/wallet`,
        authorization,
        signal,
        what: 'Wallet request',
      }),
    signal,
  );
}

async function usagePage(config: UserAccountConfig, query: string, signal: AbortSignal | undefined): Promise<UsageRecord[]> {
  const page = await config.sessions.withToken(
    (authorization) =>
      requestJson<{ data: UsageRecord[] }>(config.transport, {
        method: 'GET',
        url: `${config.baseUrl}/v1/user/usage?${query}`,
        authorization,
        signal,
        what: 'Usage request',
      }),
    signal,
  );
  return Array.isArray(page?.data) ? page.data : [];
}

/** The user's recent usage, newest first. */
export function listUsage(config: UserAccountConfig, options: { limit?: number; signal?: AbortSignal } = {}): Promise<UsageRecord[]> {
  return usagePage(config, `limit=${encodeURIComponent(String(options.limit ?? 20))}`, options.signal);
}

/** The booked record of one call (its `faucet.request_id`), or undefined while it is not booked (or not this user's). */
export async function getUsageRecord(config: UserAccountConfig, requestId: string, signal?: AbortSignal): Promise<UsageRecord | undefined> {
  const records = await usagePage(config, `request_id=${encodeURIComponent(requestId)}`, signal);
  return records.find((record) => record.request_id === requestId);
}

/**
 * Starts a Stripe Checkout top-up of the user's wallet. One request ID for all attempts: the
 * server makes at most one checkout per ID, so a retried request cannot start a second payment.
 */
export function startTopUp(
  config: UserAccountConfig,
  options: { amountUsd: string; returnUrl?: string; signal?: AbortSignal },
): Promise<TopUpCheckout> {
  const requestId = newRequestId('sdk_');
  const body: Record<string, unknown> = { amount_usd: options.amountUsd };
  if (options.returnUrl !== undefined) body.return_url = options.returnUrl;
  return config.sessions.withToken(
    (authorization) =>
      requestJson<TopUpCheckout>(config.transport, {
        method: 'POST',
        url: `${config.baseUrl}/v1/user/stripe/checkout-sessions`,
        headers: { 'x-request-id': requestId },
        authorization,
        body,
        signal: options.signal,
        what: 'Top-up request',
      }),
    options.signal,
  );
}

/** A top-up started by `startTopUp`: `pending` until the payment is confirmed and credited. */
export function getTopUp(config: UserAccountConfig, checkoutSessionId: string, signal?: AbortSignal): Promise<TopUpStatus> {
  return config.sessions.withToken(
    (authorization) =>
      requestJson<TopUpStatus>(config.transport, {
        method: 'GET',
        url: `${config.baseUrl}/v1/user/stripe/checkout-sessions/${encodeURIComponent(checkoutSessionId)}`,
        authorization,
        signal,
        what: 'Top-up status request',
      }),
    signal,
  );
}
