/**
 * Impersonation: an attacker who knows an app's public ID (it ships in the browser bundle) and an
 * end user's id (often an email or a number) asks for a session as that user, to spend the user's
 * funded wallet. It must fail for `server` and `signed` apps, and leave nothing behind.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { api, call, createTestEnv, demoFixture, demoPublicAppId, sql, type TestEnv } from '../../../test/harness.ts';
import { createDeveloperApp, sessionRowCounts, signHs256, userTokenClaims } from '../../../test/identity-kit.ts';

let testEnv: TestEnv;
beforeAll(async () => {
  testEnv = await createTestEnv();
});

async function walletBalance(walletId: string) {
  const [row] = await sql<{ balance: string }>(testEnv, 'select balance::text from wallets where id = $1', [walletId]);
  return row!.balance;
}

describe('minting a session for someone else’s user with only the public app ID', () => {
  it('fails for a server app: the seeded demo user’s funded wallet stays out of reach', async () => {
    const { demo_wallet_id: victimWallet } = await demoFixture(testEnv);
    const balance = await walletBalance(victimWallet);
    const before = await sessionRowCounts(testEnv);
    for (const attempt of [
      { public_app_id: demoPublicAppId, external_user_id: 'demo-user' },
      { public_app_id: demoPublicAppId, external_user_id: 'demo-user', device_id: 'A'.repeat(32) },
      { public_app_id: demoPublicAppId, external_user_id: 'demo-user', user_token: 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJkZW1vLXVzZXIifQ.' },
    ]) {
      const response = await call(api(), testEnv, '/v1/sessions', { json: attempt });
      expect(response.status).toBe(401);
      expect(JSON.stringify(await response.json())).not.toContain('fvs_');
    }
    expect(await sessionRowCounts(testEnv)).toEqual(before);
    expect(await walletBalance(victimWallet)).toBe(balance);
  });

  it('fails for a signed app: a token the attacker signs with a guessed secret is no proof', async () => {
    const app = await createDeveloperApp(testEnv, { policy: 'signed' });
    await call(api(), testEnv, `/v1/developer/apps/${app.publicAppId}/signing-secrets`, { method: 'POST', token: app.developerKey });
    const before = await sessionRowCounts(testEnv);
    for (const guess of ['secret', app.publicAppId, 'fss_']) {
      const response = await call(api(), testEnv, '/v1/sessions', {
        json: {
          public_app_id: app.publicAppId,
          user_token: await signHs256(guess, userTokenClaims(app.publicAppId, 'victim@example.com')),
        },
      });
      expect(response.status).toBe(401);
    }
    const bare = await call(api(), testEnv, '/v1/sessions', {
      json: { public_app_id: app.publicAppId, external_user_id: 'victim@example.com' },
    });
    expect(bare.status).toBe(401);
    expect(await sessionRowCounts(testEnv)).toEqual(before);
  });
});
