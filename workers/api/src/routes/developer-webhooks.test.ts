/**
 * Signed events out (docs/webhooks.md), through the API and the webhooks queue to a recording
 * endpoint: endpoints and their secret (shown once, stored sealed); a payout's states, a clawback and
 * a developer key's budget written by triggers with the change (an outbox) and delivered signed, once
 * per subscribed endpoint; a failing endpoint retried then failed; resend with the same event id;
 * rotation with an overlap; a private target never fetched; another developer's endpoint is 404.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { chargeRefundedEvent } from '../../../../scripts/lib/stripe-events.ts';
import { bookUsage } from '#shared/ledger/book-usage.ts';
import { parseWireAmount } from '#shared/money/index.ts';
import { rateUsage } from '#shared/rating/rate-usage.ts';
import { userRef } from '#shared/auth/user-ref.ts';
import { encodeBase64 } from '#shared/provider-keys/keyring.ts';
import { type EndpointRow, signingSecrets } from '#shared/webhooks/endpoints.ts';
import { verifySignature } from '#shared/webhooks/signature.ts';
import {
  chargeOf,
  createTestUser,
  fund,
  openLedgerDatabase,
  spendWithDemoDeveloper,
  type LedgerTestDatabase,
} from '../../../test/ledger-kit.ts';
import { deliver, paidCheckout } from '../../../test/payments-kit.ts';
import { adminToken, api, call, createTestEnv, developerKey, sql, type TestEnv } from '../../../test/harness.ts';
import { relayNow } from '../webhook-relay.ts';
import {
  addEndpoint,
  deliveriesOf,
  developerRequest,
  eventually,
  receiveWebhooks,
  type ReceivedWebhook,
} from '../../../test/webhook-kit.ts';

type Body = Record<string, any>;
let testEnv: TestEnv;
let database: LedgerTestDatabase;

beforeAll(async () => {
  testEnv = await createTestEnv();
  database = openLedgerDatabase(testEnv, 4);
  return () => database.close();
});

async function onboard(email: string) {
  const created = await developerRequest(testEnv, adminToken, '/v1/admin/developers', { json: { name: email, email } });
  expect(created.status).toBe(201);
  const [wallet] = await sql<{ id: string }>(testEnv, 'select id from wallets where developer_id = $1', [created.body.developer.id]);
  return { key: created.body.key.api_key as string, walletId: wallet!.id, developerId: created.body.developer.id as string };
}

const ofType = (received: ReceivedWebhook[], type: string) => received.filter((hook) => hook.event.type === type);
const eventCount = async (developerId: string) =>
  (await sql<{ n: number }>(testEnv, 'select count(*)::int as n from webhook_events where developer_id = $1', [developerId]))[0]!.n;

describe('webhook endpoints', () => {
  it('show the signing secret once, list it masked, and refuse private targets, unknown types and credentials, writing nothing', async () => {
    const dev = await onboard('endpoints@example.test');
    const created = await developerRequest(testEnv, dev.key, '/v1/developer/webhooks', {
      json: { url: 'https://hooks.example.com/a', event_types: ['payout.paid', 'payout.paid'], description: 'payouts' },
    });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(created.body).toMatchObject({ url: 'https://hooks.example.com/a', event_types: ['payout.paid'], enabled: true });
    expect(created.body.secret_hint).toBe(`whsec_…${created.body.secret.slice(-4)}`);

    const listed = await developerRequest(testEnv, dev.key, '/v1/developer/webhooks');
    expect(listed.body.data).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secret);
    const [stored] = await sql<{ secret_ciphertext: string }>(testEnv, 'select secret_ciphertext from webhook_endpoints where id = $1', [
      created.body.id,
    ]);
    expect(stored!.secret_ciphertext).not.toContain(created.body.secret.slice(6));

    for (const [body, message] of [
      [{ url: 'http://10.0.0.7/hook', event_types: ['*'] }, /url is refused/],
      [{ url: 'https://169.254.169.254/latest', event_types: ['*'] }, /url is refused/],
      [{ url: 'https://user:pw@hooks.example.com/a', event_types: ['*'] }, /credentials/],
      [{ url: 'https://hooks.example.com/a', event_types: ['payout.exploded'] }, /event_types/],
      [{ url: 'https://hooks.example.com/a', event_types: [] }, /event_types/],
      [{ url: 'https://hooks.example.com/a', event_types: ['*'], secret: 'whsec_mine' }, /secret/],
    ] as const) {
      const refused = await developerRequest(testEnv, dev.key, '/v1/developer/webhooks', { json: body });
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error.message).toMatch(message);
    }
    expect((await developerRequest(testEnv, dev.key, '/v1/developer/webhooks')).body.data).toHaveLength(1);

    const changed = await developerRequest(testEnv, dev.key, `/v1/developer/webhooks/${created.body.id}`, {
      method: 'PATCH',
      json: { event_types: ['*', 'payout.paid'], enabled: false },
    });
    expect(changed.body).toMatchObject({ event_types: ['*'], enabled: false, secret_hint: created.body.secret_hint });
    const rotated = await developerRequest(testEnv, dev.key, `/v1/developer/webhooks/${created.body.id}/rotate-secret`, { method: 'POST' });
    const deleted = await developerRequest(testEnv, dev.key, `/v1/developer/webhooks/${created.body.id}`, { method: 'DELETE' });
    expect(deleted.body).toEqual({ id: created.body.id, deleted: true });
    expect((await developerRequest(testEnv, dev.key, `/v1/developer/webhooks/${created.body.id}`)).status).toBe(404);

    // Each change is in the developer's audit log, with the endpoint as it became and never a secret.
    const audit = await developerRequest(testEnv, dev.key, '/v1/developer/audit-log?limit=100');
    const rows = (audit.body.data as Body[]).filter((row) => row.target_id === created.body.id);
    expect(rows.map((row) => row.action)).toEqual([
      'webhook_endpoint.deleted',
      'webhook_endpoint.secret_rotated',
      'webhook_endpoint.updated',
      'webhook_endpoint.created',
    ]);
    expect(rows[0]!.metadata.after).toMatchObject({ deleted: true, enabled: false, url: 'https://hooks.example.com/a' });
    expect(rows[3]!.metadata.after).toMatchObject({ event_types: ['payout.paid'], enabled: true, deleted: false });
    const text = JSON.stringify(audit.body);
    expect(text).not.toContain(created.body.secret);
    expect(text).not.toContain(rotated.body.secret);
  });

  it("are another developer's as unknown as missing ones: 404 for the endpoint, its deliveries and a resend", async () => {
    const owner = await onboard('owner@example.test');
    const rival = await onboard('rival@example.test');
    const endpoint = await addEndpoint(testEnv, owner.key, ['*']);
    const someDelivery = crypto.randomUUID();
    for (const [path, method] of [
      [`/v1/developer/webhooks/${endpoint.id}`, 'GET'],
      [`/v1/developer/webhooks/${endpoint.id}`, 'DELETE'],
      [`/v1/developer/webhooks/${endpoint.id}/deliveries`, 'GET'],
      [`/v1/developer/webhooks/${endpoint.id}/deliveries/${someDelivery}`, 'GET'],
      [`/v1/developer/webhooks/${endpoint.id}/deliveries/${someDelivery}/resend`, 'POST'],
      [`/v1/developer/webhooks/${endpoint.id}/rotate-secret`, 'POST'],
    ] as const) {
      const response = await call(api(), testEnv, path, { method, token: rival.key });
      expect(response.status, `${method} ${path}`).toBe(404);
    }
    const patched = await developerRequest(testEnv, rival.key, `/v1/developer/webhooks/${endpoint.id}`, {
      method: 'PATCH',
      json: { url: 'https://evil.example.com/steal' },
    });
    expect(patched.status).toBe(404);
    expect((await developerRequest(testEnv, owner.key, `/v1/developer/webhooks/${endpoint.id}`)).body.url).toBe(
      'https://hooks.example.com/faucet',
    );
  });
});

describe('events written with the change they report', () => {
  it("a payout's states reach a subscribed endpoint signed, once each in order, and no endpoint subscribed to other types", async () => {
    const dev = await onboard('payouts@example.test');
    const received = receiveWebhooks();
    const payouts = await addEndpoint(testEnv, dev.key, ['payout.pending', 'payout.processing', 'payout.paid']);
    const other = await addEndpoint(testEnv, dev.key, ['end_user.balance_low'], 'https://other.example.com/hook');
    await fund(testEnv, dev.walletId, '12.00000000');

    const run = await developerRequest(testEnv, adminToken, '/v1/admin/payouts/run-mock', { json: { threshold_usd: '1.00000000' } });
    const payout = (run.body.data as Body[]).find((row) => row.wallet_id === dev.walletId)!;
    // An operator's request that fails changes nothing and invents no event.
    const before = await eventCount(dev.developerId);
    const refused = await call(api(), testEnv, `/v1/admin/payouts/${crypto.randomUUID()}/approve`, {
      token: adminToken,
      json: { operator_note: 'typo' },
    });
    expect(refused.status).toBe(404);
    expect(await eventCount(dev.developerId)).toBe(before);
    await developerRequest(testEnv, adminToken, `/v1/admin/payouts/${payout.id}/approve`, { json: { operator_note: 'ok' } });
    await developerRequest(testEnv, adminToken, `/v1/admin/payouts/${payout.id}/mark-paid`, { method: 'POST' });

    await eventually(() => received.length >= 3);
    expect(received.map((hook) => hook.event.type)).toEqual(['payout.pending', 'payout.processing', 'payout.paid']);
    expect(new Set(received.map((hook) => hook.event.id)).size).toBe(3);
    for (const hook of received) {
      expect(hook.url).toBe('https://hooks.example.com/faucet');
      expect(hook.headers['content-type']).toBe('application/json');
      expect(hook.headers['faucet-event-id']).toBe(hook.event.id);
      expect(hook.headers['faucet-event-type']).toBe(hook.event.type);
      expect(await verifySignature(hook.headers['faucet-signature']!, hook.body, payouts.secret)).toBe(true);
      expect(await verifySignature(hook.headers['faucet-signature']!, `${hook.body} `, payouts.secret)).toBe(false);
      expect(await verifySignature(hook.headers['faucet-signature']!, hook.body, other.secret)).toBe(false);
      expect(hook.event.data).toMatchObject({ payout_id: payout.id, amount_usd: '12.00000000' });
    }
    expect(received[2]!.event.data).toMatchObject({ status: 'paid', previous_status: 'processing' });
    const log = await deliveriesOf(testEnv, dev.key, payouts.id);
    expect(log.map((delivery) => [delivery.event.type, delivery.status, delivery.attempts])).toEqual([
      ['payout.paid', 'delivered', 1],
      ['payout.processing', 'delivered', 1],
      ['payout.pending', 'delivered', 1],
    ]);
    expect(await deliveriesOf(testEnv, dev.key, other.id)).toEqual([]);
    // The relay running again (the cron) makes no second delivery of a relayed event.
    expect(await relayNow(testEnv)).toBe(0);
    expect(await deliveriesOf(testEnv, dev.key, payouts.id)).toHaveLength(3);
  });

  it('a failing endpoint is retried, then failed with every attempt logged; a resend delivers the same event id', async () => {
    const dev = await onboard('failing@example.test');
    let status = 503;
    const received = receiveWebhooks(() => status);
    const endpoint = await addEndpoint(testEnv, dev.key, ['payout.pending']);
    await fund(testEnv, dev.walletId, '3.00000000');
    await developerRequest(testEnv, adminToken, '/v1/admin/payouts/run-mock', { json: { threshold_usd: '1.00000000' } });

    // WEBHOOK_MAX_ATTEMPTS = 3 in the test worker (wrangler.toml), retried without delay.
    const [failed] = await eventually(async () => {
      const log = await deliveriesOf(testEnv, dev.key, endpoint.id);
      return log[0]?.status === 'failed' ? log : undefined;
    });
    expect(failed).toMatchObject({ attempts: 3, last_status: 503, last_error: 'the endpoint answered HTTP 503', next_attempt_at: null });
    const detail = await developerRequest(testEnv, dev.key, `/v1/developer/webhooks/${endpoint.id}/deliveries/${failed!.id}`);
    expect(detail.body.attempt_log.map((attempt: Body) => attempt.status_code)).toEqual([503, 503, 503]);
    expect(detail.body.payload).toMatchObject({ id: failed!.event.id, type: 'payout.pending' });
    expect(received).toHaveLength(3);
    expect(received.map((hook) => hook.headers['faucet-delivery-attempt'])).toEqual(['1', '2', '3']);

    status = 200;
    const resent = await developerRequest(testEnv, dev.key, `/v1/developer/webhooks/${endpoint.id}/deliveries/${failed!.id}/resend`, {
      method: 'POST',
    });
    expect(resent.status).toBe(202);
    expect(resent.body.status).toBe('pending');
    await eventually(async () => (await deliveriesOf(testEnv, dev.key, endpoint.id))[0]?.status === 'delivered');
    expect(received).toHaveLength(4);
    expect(new Set(received.map((hook) => hook.event.id))).toEqual(new Set([failed!.event.id]));
    expect(received[3]!.body).toBe(received[0]!.body);
    expect(received[3]!.headers['faucet-delivery-attempt']).toBe('4');
  });

  it('a rotated secret signs beside the previous one through the overlap; with no overlap the previous one stops at once', async () => {
    const dev = await onboard('rotation@example.test');
    const received = receiveWebhooks();
    const endpoint = await addEndpoint(testEnv, dev.key, ['payout.pending']);
    await fund(testEnv, dev.walletId, '2.00000000');
    await developerRequest(testEnv, adminToken, '/v1/admin/payouts/run-mock', { json: { threshold_usd: '1.00000000' } });
    const [delivery] = await eventually(async () => {
      const log = await deliveriesOf(testEnv, dev.key, endpoint.id);
      return log[0]?.status === 'delivered' ? log : undefined;
    });
    const resend = async () => {
      const count = received.length;
      await developerRequest(testEnv, dev.key, `/v1/developer/webhooks/${endpoint.id}/deliveries/${delivery!.id}/resend`, {
        method: 'POST',
      });
      return eventually(() => received[count]);
    };

    const rotated = await developerRequest(testEnv, dev.key, `/v1/developer/webhooks/${endpoint.id}/rotate-secret`, {
      method: 'POST',
      json: { overlap_seconds: 3600 },
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    expect(Date.parse(rotated.body.previous_secret_expires_at) - Date.now()).toBeGreaterThan(3500_000);
    const during = await resend();
    expect(during.headers['faucet-signature']!.match(/v1=/g)).toHaveLength(2);
    expect(await verifySignature(during.headers['faucet-signature']!, during.body, endpoint.secret)).toBe(true);
    expect(await verifySignature(during.headers['faucet-signature']!, during.body, rotated.body.secret)).toBe(true);

    const again = await developerRequest(testEnv, dev.key, `/v1/developer/webhooks/${endpoint.id}/rotate-secret`, {
      method: 'POST',
      json: { overlap_seconds: 0 },
    });
    expect(again.body.previous_secret_expires_at).toBeNull();
    const after = await resend();
    expect(after.headers['faucet-signature']!.match(/v1=/g)).toHaveLength(1);
    expect(await verifySignature(after.headers['faucet-signature']!, after.body, again.body.secret)).toBe(true);
    expect(await verifySignature(after.headers['faucet-signature']!, after.body, rotated.body.secret)).toBe(false);
    expect(await verifySignature(after.headers['faucet-signature']!, after.body, endpoint.secret)).toBe(false);
  });

  it('a target that became private is never fetched: the delivery fails at once, saying why', async () => {
    const dev = await onboard('private@example.test');
    const received = receiveWebhooks();
    const endpoint = await addEndpoint(testEnv, dev.key, ['payout.pending']);
    // As if the address guard had changed since the endpoint was stored.
    await sql(testEnv, `update webhook_endpoints set url = 'http://169.254.169.254/latest/meta-data' where id = $1`, [endpoint.id]);
    await fund(testEnv, dev.walletId, '2.00000000');
    await developerRequest(testEnv, adminToken, '/v1/admin/payouts/run-mock', { json: { threshold_usd: '1.00000000' } });
    const [failed] = await eventually(async () => {
      const log = await deliveriesOf(testEnv, dev.key, endpoint.id);
      return log[0]?.status === 'failed' ? log : undefined;
    });
    expect(failed).toMatchObject({ attempts: 1, last_status: null });
    expect(failed!.last_error).toMatch(/^refused: /);
    expect(received).toEqual([]);
  });

  it("a clawback of the developer's revenue is delivered with the end user's user_ref, never a raw id", async () => {
    const received = receiveWebhooks();
    const endpoint = await addEndpoint(testEnv, developerKey, ['clawback.booked']);
    const checkout = await paidCheckout(testEnv, '10.00000000');
    await spendWithDemoDeveloper(database, testEnv, checkout.endUserId, chargeOf('3.00000000'));
    const event = chargeRefundedEvent({
      id: checkout.chargeId,
      payment_intent: checkout.paymentIntentId,
      amount: checkout.amountCents,
      amount_refunded: checkout.amountCents,
    });
    expect((await deliver(testEnv, event)).body.outcome).toBe('refund_booked');
    const [hook] = await eventually(() =>
      ofType(received, 'clawback.booked').length > 0 ? ofType(received, 'clawback.booked') : undefined,
    );
    const [clawback] = await sql<{ id: string; amount: string }>(
      testEnv,
      'select id, amount::text from revenue_clawbacks where user_wallet_id = $1',
      [checkout.walletId],
    );
    expect(hook!.event.data).toEqual({
      user_ref: await userRef(testEnv.SESSION_HASH_SECRET, checkout.endUserId),
      clawback_id: clawback!.id,
      status: 'booked',
      source_kind: 'refund',
      amount_usd: clawback!.amount,
    });
    expect(hook!.body).not.toContain(checkout.endUserId);
    expect(await verifySignature(hook!.headers['faucet-signature']!, hook!.body, endpoint.secret)).toBe(true);
  });

  it("a developer key's monthly budget sends budget_warning at 80 % and budget_exhausted at 100 %, once each per month", async () => {
    const received = receiveWebhooks();
    const endpoint = await addEndpoint(testEnv, developerKey, ['provider_key.budget_warning', 'provider_key.budget_exhausted']);
    const created = await developerRequest(testEnv, developerKey, '/v1/developer/provider-keys', {
      json: { provider: 'openai', api_key: `sk-test-${'b'.repeat(40)}`, monthly_budget_usd: '1.00000000' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const keyId = created.body.id as string;
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    // What the key's provider charged for the call (the budget counts it), whatever the tokens.
    const spendOnKey = async (upstreamUsd: string) => {
      await bookUsage(database.db, {
        requestId: `key-budget-${crypto.randomUUID()}`,
        appId: user.appId,
        endUserId: user.endUserId,
        featureKey: 'chat',
        providerCredentialId: keyId,
        rated: {
          ...rateUsage({
            routeMode: 'developer_key',
            provider: 'openai',
            model: 'gpt-4o-mini',
            inputTokens: 1,
            outputTokens: 1,
            estimated: false,
          }),
          upstreamCostUsd: parseWireAmount(upstreamUsd),
        },
      });
      // Booked outside the API (as the gateway's wallet objects book): the relay runs as their wake-up runs it.
      await relayNow(testEnv);
    };
    await spendOnKey('0.70000000');
    await spendOnKey('0.15000000');
    const warning = await eventually(() => ofType(received, 'provider_key.budget_warning')[0]);
    expect(warning.event.data).toMatchObject({
      provider_key_id: keyId,
      percent: 80,
      monthly_budget_usd: '1.00000000',
      spent_usd: '0.85000000',
    });
    await spendOnKey('0.20000000');
    await spendOnKey('0.20000000');
    const exhausted = await eventually(() => ofType(received, 'provider_key.budget_exhausted')[0]);
    expect(exhausted.event.data).toMatchObject({ provider_key_id: keyId, percent: 100, spent_usd: '1.05000000' });
    expect(await verifySignature(exhausted.headers['faucet-signature']!, exhausted.body, endpoint.secret)).toBe(true);
    const [counts] = await sql<{ warnings: number; exhausted: number }>(
      testEnv,
      `select count(*) filter (where type = 'provider_key.budget_warning')::int as warnings,
              count(*) filter (where type = 'provider_key.budget_exhausted')::int as exhausted
         from webhook_events where data ->> 'provider_key_id' = $1`,
      [keyId],
    );
    expect(counts).toEqual({ warnings: 1, exhausted: 1 });
  });
});

describe('none lost', () => {
  it("a booking that takes an end user's spend to the app's day limit sends end_user.spend_limit_reached once", async () => {
    const received = receiveWebhooks();
    await addEndpoint(testEnv, developerKey, ['end_user.spend_limit_reached']);
    const user = await createTestUser(testEnv);
    await fund(database, user.walletId, '1.00000000');
    const limited = await developerRequest(testEnv, developerKey, '/v1/developer/apps/app_demo_local', {
      method: 'PATCH',
      json: { limits: { spend_per_day_usd: '0.50000000' } },
    });
    expect(limited.status).toBe(200);
    try {
      const spend = async (amount: string) => {
        await spendWithDemoDeveloper(database, testEnv, user.endUserId, chargeOf(amount));
        await relayNow(testEnv);
      };
      await spend('0.30000000');
      await spend('0.20000000');
      await spend('0.10000000');
      const hook = await eventually(() => ofType(received, 'end_user.spend_limit_reached')[0]);
      expect(hook.event.data).toMatchObject({
        public_app_id: 'app_demo_local',
        user_ref: await userRef(testEnv.SESSION_HASH_SECRET, user.endUserId),
        period: 'day',
        limit_usd: '0.50000000',
        spent_usd: '0.50000000',
      });
      const [events] = await sql<{ n: number }>(
        testEnv,
        `select count(*)::int as n from webhook_events where type = 'end_user.spend_limit_reached' and data ->> 'end_user_id' = $1`,
        [user.endUserId],
      );
      expect(events!.n).toBe(1);
    } finally {
      await developerRequest(testEnv, developerKey, '/v1/developer/apps/app_demo_local', {
        method: 'PATCH',
        json: { limits: { spend_per_day_usd: null } },
      });
    }
  });

  it('a delivery whose queue message was lost is queued again by the cron and delivered', async () => {
    const dev = await onboard('lost@example.test');
    const received = receiveWebhooks();
    const endpoint = await addEndpoint(testEnv, dev.key, ['payout.pending']);
    // The event and its delivery, as a relay that claimed them and then failed to send leaves them.
    const [event] = await sql<{ id: string }>(
      testEnv,
      `insert into webhook_events (developer_id, type, data, relayed_at) values ($1, 'payout.pending', $2, now()) returning id`,
      [dev.developerId, JSON.stringify({ payout_id: crypto.randomUUID(), status: 'pending', amount_usd: '1.00000000' })],
    );
    await sql(
      testEnv,
      `insert into webhook_deliveries (event_id, endpoint_id, developer_id, next_attempt_at) values ($1, $2, $3, now() - interval '11 minutes')`,
      [event!.id, endpoint.id, dev.developerId],
    );
    const { runMaintenance } = await import('../maintenance.ts');
    expect((await runMaintenance(testEnv)).queuedWebhookDeliveries).toBeGreaterThanOrEqual(1);
    const hook = await eventually(() => received.find((candidate) => candidate.event.id === event!.id));
    expect(await verifySignature(hook.headers['faucet-signature']!, hook.body, endpoint.secret)).toBe(true);
    await eventually(async () => (await deliveriesOf(testEnv, dev.key, endpoint.id))[0]?.status === 'delivered');
  });
});

describe('rotating the encryption key', () => {
  it("re-seals every webhook secret (the previous one too, in its overlap): deliveries still sign with the developer's secrets under the new key alone", async () => {
    const dev = await onboard('rekey@example.test');
    const endpoint = await addEndpoint(testEnv, dev.key, ['payout.pending']);
    const rotated = await developerRequest(testEnv, dev.key, `/v1/developer/webhooks/${endpoint.id}/rotate-secret`, {
      method: 'POST',
      json: { overlap_seconds: 3600 },
    });
    const newEntry = `v2:${encodeBase64(crypto.getRandomValues(new Uint8Array(32)))}`;
    const rotating = { ...testEnv, PROVIDER_KEY_ENCRYPTION_KEY: `${newEntry},${testEnv.PROVIDER_KEY_ENCRYPTION_KEY}` };
    const result = await call(api(), rotating, '/v1/admin/provider-keys/re-encrypt', { method: 'POST', token: adminToken });
    expect(result.status).toBe(200);
    const body = (await result.json()) as { webhook_secrets: { re_encrypted: number; unreadable: number; remaining: number } };
    expect(body.webhook_secrets.re_encrypted).toBeGreaterThanOrEqual(1);
    expect(body.webhook_secrets).toMatchObject({ unreadable: 0, remaining: 0 });
    const [row] = await sql<{ secret_key_version: number; previous_secret_key_version: number }>(
      testEnv,
      'select secret_key_version, previous_secret_key_version from webhook_endpoints where id = $1',
      [endpoint.id],
    );
    expect(row).toEqual({ secret_key_version: 2, previous_secret_key_version: 2 });
    const [stored] = await sql<Record<string, unknown>>(testEnv, 'select * from webhook_endpoints where id = $1', [endpoint.id]);
    const secrets = await signingSecrets({ ...testEnv, PROVIDER_KEY_ENCRYPTION_KEY: newEntry }, stored as unknown as EndpointRow);
    expect(secrets).toEqual([rotated.body.secret, endpoint.secret]);
  });
});
