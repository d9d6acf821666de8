/**
 * What an end-to-end client test starts from: a new end user of the stack's demo app, signed in with
 * a session token (`POST /v1/sessions` with the developer key), whose wallet holds test money credited
 * by the admin API.
 */
import type { StackCoordinates } from '../setup/node-stack.ts';

async function json<T>(response: Response): Promise<T> {
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** A session token of a new end user whose wallet holds `amountUsd`. */
export async function fundedSession(stack: StackCoordinates, amountUsd = '1.00000000'): Promise<string> {
  const session = await json<{ session_token: string }>(
    await fetch(`${stack.apiUrl}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.developerKey}` },
      body: JSON.stringify({ public_app_id: stack.publicAppId, external_user_id: `e2e-${crypto.randomUUID()}` }),
    }),
  );
  const wallet = await json<{ wallet_id: string }>(
    await fetch(`${stack.apiUrl}/v1/user/wallet`, { headers: { authorization: `Bearer ${session.session_token}` } }),
  );
  await json(
    await fetch(`${stack.apiUrl}/v1/admin/wallets/${wallet.wallet_id}/credit-test-balance`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.adminToken}` },
      body: JSON.stringify({ amount_usd: amountUsd }),
    }),
  );
  return session.session_token;
}

/** The session user's usage record of one call (`GET /v1/user/usage?request_id=`: its receipt). */
export async function usageRecord(stack: StackCoordinates, token: string, requestId: string): Promise<Record<string, unknown> | undefined> {
  const usage = await json<{ data: Record<string, unknown>[] }>(
    await fetch(`${stack.apiUrl}/v1/user/usage?request_id=${encodeURIComponent(requestId)}`, {
      headers: { authorization: `Bearer ${token}` },
    }),
  );
  return usage.data[0];
}
