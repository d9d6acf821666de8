/**
 * The documented signature scheme (docs/webhooks.md), checked the way a receiver checks it: the
 * header's t and v1s over `<t>.<raw body>`, a replay outside the tolerance refused, either of two
 * secrets during a rotation, and a malformed header never accepted.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { webhookMaxAttempts, webhookRetryDelaySeconds } from './deliver-webhooks.ts';
import { parseWebhookMessage } from './webhook-message.ts';
import { signatureHeader, verifySignature } from './signature.ts';

const body = '{"id":"7b0c…","type":"payout.paid","data":{"amount_usd":"12.00000000"}}';
const now = 1_790_000_000;

describe('a webhook signature', () => {
  it('is HMAC-SHA-256 of "<t>.<body>" in hex, as any receiver computes it with its own HMAC', async () => {
    const header = await signatureHeader(['whsec_current'], now, body);
    const expected = createHmac('sha256', 'whsec_current').update(`${now}.${body}`).digest('hex');
    expect(header).toBe(`t=${now},v1=${expected}`);
    expect(await verifySignature(header, body, 'whsec_current', { nowSeconds: now })).toBe(true);
  });

  it('fails for another body, another secret, a replay outside the tolerance, or a malformed header', async () => {
    const header = await signatureHeader(['whsec_current'], now, body);
    expect(await verifySignature(header, `${body}\n`, 'whsec_current', { nowSeconds: now })).toBe(false);
    expect(await verifySignature(header, body, 'whsec_other', { nowSeconds: now })).toBe(false);
    expect(await verifySignature(header, body, 'whsec_current', { nowSeconds: now + 301 })).toBe(false);
    expect(await verifySignature(header, body, 'whsec_current', { nowSeconds: now - 301 })).toBe(false);
    expect(await verifySignature(header, body, 'whsec_current', { nowSeconds: now + 3600, toleranceSeconds: 3600 })).toBe(true);
    for (const malformed of [null, '', `v1=${header.split('v1=')[1]}`, `t=${now}`, `t=abc,v1=${header.split('v1=')[1]}`]) {
      expect(await verifySignature(malformed, body, 'whsec_current', { nowSeconds: now })).toBe(false);
    }
    // A signature moved to another timestamp does not verify.
    const moved = header.replace(`t=${now}`, `t=${now + 1}`);
    expect(await verifySignature(moved, body, 'whsec_current', { nowSeconds: now })).toBe(false);
  });

  it('carries one v1 per live secret during a rotation: either verifies', async () => {
    const header = await signatureHeader(['whsec_new', 'whsec_old'], now, body);
    expect(header.match(/v1=/g)).toHaveLength(2);
    expect(await verifySignature(header, body, 'whsec_new', { nowSeconds: now })).toBe(true);
    expect(await verifySignature(header, body, 'whsec_old', { nowSeconds: now })).toBe(true);
    expect(await verifySignature(header, body, 'whsec_retired', { nowSeconds: now })).toBe(false);
  });
});

describe('a webhooks queue message', () => {
  it('is trusted only in its known shapes', () => {
    const id = '0b6f6f0e-4a43-4a77-9d4e-2b1f1f1f1f1f';
    expect(parseWebhookMessage({ kind: 'deliver', deliveryId: id })).toEqual({ kind: 'deliver', deliveryId: id });
    expect(parseWebhookMessage({ kind: 'relay' })).toEqual({ kind: 'relay' });
    for (const bad of [null, 'relay', { kind: 'deliver' }, { kind: 'deliver', deliveryId: "1'; drop table" }, { kind: 'other' }]) {
      expect(parseWebhookMessage(bad)).toBeNull();
    }
  });
});

describe('a failing delivery', () => {
  it('is retried 30 s, 1, 2, 4 … minutes apart, at most an hour, up to 8 attempts (both settings of the env)', () => {
    expect([1, 2, 3, 4, 7, 8, 20].map((attempts) => webhookRetryDelaySeconds({}, attempts))).toEqual([30, 60, 120, 240, 1920, 3600, 3600]);
    expect(webhookRetryDelaySeconds({ WEBHOOK_RETRY_BASE_SECONDS: '0' }, 5)).toBe(0);
    expect(webhookMaxAttempts({})).toBe(8);
    expect(webhookMaxAttempts({ WEBHOOK_MAX_ATTEMPTS: '3' })).toBe(3);
    expect(webhookMaxAttempts({ WEBHOOK_MAX_ATTEMPTS: '0' })).toBe(1);
  });
});
