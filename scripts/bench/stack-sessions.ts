/**
 * Sessions of new end users made as a developer makes them, through the local stack's API: a session
 * (POST /v1/sessions), its wallet, funded through the admin test-balance credit.
 */
import type { Stack } from '../lib/stack.ts';

async function expectOk(response: Response): Promise<unknown> {
  if (!response.ok) throw new Error(`${new URL(response.url).pathname} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

/** A session token of a brand-new end user whose wallet holds `amountUsd`. */
async function createFundedSession(stack: Stack, label: string, amountUsd = '100.00000000'): Promise<string> {
  const session = (await expectOk(
    await fetch(`${stack.apiUrl}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.developerKey}` },
      body: JSON.stringify({ public_app_id: stack.publicAppId, external_user_id: `bench-${label}-${crypto.randomUUID()}` }),
    }),
  )) as { session_token: string };
  const wallet = (await expectOk(
    await fetch(`${stack.apiUrl}/v1/user/wallet`, { headers: { authorization: `Bearer ${session.session_token}` } }),
  )) as { wallet_id: string };
  await expectOk(
    await fetch(`${stack.apiUrl}/v1/admin/wallets/${wallet.wallet_id}/credit-test-balance`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.adminToken}` },
      body: JSON.stringify({ amount_usd: amountUsd }),
    }),
  );
  return session.session_token;
}

/** `count` funded sessions, a few created at a time. */
export async function createFundedSessions(stack: Stack, label: string, count: number, concurrency = 4): Promise<string[]> {
  const tokens: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const index = next++;
        tokens[index] = await createFundedSession(stack, `${label}-${index}`);
      }
    }),
  );
  return tokens;
}
