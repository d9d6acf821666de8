/**
 * Events the gateway's calls cause (docs/webhooks.md): the bookings a wallet object flushes fire the
 * triggers that write `end_user.balance_low` (a balance crossing the app's threshold, once per
 * crossing) and `end_user.spend_limit_reached` (a call refused by an app spend limit), and the flush
 * wakes the relay through the webhooks queue; each reaches the endpoint signed, naming the end user
 * by user_ref.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '#shared/webhooks/signature.ts';
import { fakeUpstream, jsonResponse, openAiCompletion } from '../../../test/fake-upstream.ts';
import { chat, fundedSession, gatewayTestEnv, gatewayWith, settled } from '../../../test/gateway-kit.ts';
import { demoPublicAppId, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { addEndpoint, developerRequest, eventually, receiveWebhooks } from '../../../test/webhook-kit.ts';

let testEnv: TestEnv;
const upstream = fakeUpstream(() => jsonResponse(openAiCompletion('fine')));
const ask = { model: 'openai:gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 20 };

beforeAll(async () => {
  testEnv = await gatewayTestEnv({ OPENAI_API_KEY: 'sk-platform-pool-test' });
});

describe('a call through the gateway', () => {
  it('that takes a balance below the app’s threshold sends end_user.balance_low once, by user_ref, signed', async () => {
    const received = receiveWebhooks();
    const endpoint = await addEndpoint(testEnv, developerKey, ['end_user.balance_low']);
    const alerts = await developerRequest(testEnv, developerKey, `/v1/developer/apps/${demoPublicAppId}/alerts`, {
      method: 'PUT',
      json: { low_balance_threshold_usd: '0.50000000' },
    });
    expect(alerts.body).toEqual({ public_app_id: demoPublicAppId, low_balance_threshold_usd: '0.50000000' });
    // A hair above the threshold: the first call's charge takes it below.
    const session = await fundedSession(testEnv, '0.50000100');
    const wealthy = await fundedSession(testEnv, '5.00000000');
    for (const token of [session.token, wealthy.token, session.token]) {
      expect((await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, token, ask)).status).toBe(200);
      await settled(testEnv);
    }
    const [hook] = await eventually(() => (received.length > 0 ? received : undefined));
    const [wallet] = await sql<{ balance: string }>(testEnv, 'select balance::text from wallets where id = $1', [session.walletId]);
    expect(hook!.event.type).toBe('end_user.balance_low');
    expect(hook!.event.data).toMatchObject({ public_app_id: demoPublicAppId, user_ref: session.userRef, threshold_usd: '0.50000000' });
    expect(String(hook!.event.data.balance_usd) < '0.50000000').toBe(true);
    expect(BigInt(String(hook!.event.data.balance_usd).replace('.', ''))).toBeGreaterThanOrEqual(BigInt(wallet!.balance.replace('.', '')));
    expect(hook!.body).not.toContain(session.endUserId);
    expect(await verifySignature(hook!.headers['faucet-signature']!, hook!.body, endpoint.secret)).toBe(true);
    // The second call of the same user stayed below: no second event; the wealthy user never crossed.
    const [events] = await sql<{ n: number }>(testEnv, `select count(*)::int as n from webhook_events where type = 'end_user.balance_low'`);
    expect(events!.n).toBe(1);
    await developerRequest(testEnv, developerKey, `/v1/developer/apps/${demoPublicAppId}/alerts`, {
      method: 'PUT',
      json: { low_balance_threshold_usd: null },
    });
  });

  it('refused by an app spend limit sends end_user.spend_limit_reached once for that user and period', async () => {
    const received = receiveWebhooks();
    await addEndpoint(testEnv, developerKey, ['end_user.spend_limit_reached']);
    const limited = await developerRequest(testEnv, developerKey, `/v1/developer/apps/${demoPublicAppId}`, {
      method: 'PATCH',
      json: { limits: { spend_per_day_usd: '0.00000100' } },
    });
    expect(limited.status, JSON.stringify(limited.body)).toBe(200);
    try {
      const session = await fundedSession(testEnv, '2.00000000');
      for (let call = 0; call < 2; call++) {
        const refused = await chat(gatewayWith({ upstreamFetch: upstream.fetch }), testEnv, session.token, ask);
        expect(refused.status).toBe(402);
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('budget_exceeded');
      }
      await settled(testEnv);
      const [hook] = await eventually(() => (received.length > 0 ? received : undefined));
      expect(hook!.event.type).toBe('end_user.spend_limit_reached');
      expect(hook!.event.data).toMatchObject({
        public_app_id: demoPublicAppId,
        user_ref: session.userRef,
        period: 'day',
        limit_usd: '0.00000100',
        spent_usd: '0.00000000',
      });
      const [events] = await sql<{ n: number }>(
        testEnv,
        `select count(*)::int as n from webhook_events where type = 'end_user.spend_limit_reached'`,
      );
      expect(events!.n).toBe(1);
    } finally {
      await developerRequest(testEnv, developerKey, `/v1/developer/apps/${demoPublicAppId}`, {
        method: 'PATCH',
        json: { limits: { spend_per_day_usd: null } },
      });
    }
  });
});
