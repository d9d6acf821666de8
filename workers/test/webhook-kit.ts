/**
 * The tests' webhook endpoint (docs/webhooks.md): what the test worker's webhooks consumer sends is
 * recorded whole (raw body, headers), answered with the status the test sets, and checked with the
 * receiver's documented scheme (signature.ts `verifySignature`).
 */
import { expect } from 'vitest';
import { api, call, type TestEnv } from './harness.ts';
import { webhookReceiver } from './trace-receiver.ts';

export interface ReceivedWebhook {
  url: string;
  headers: Record<string, string>;
  /** The raw body, exactly as sent (what the signature covers). */
  body: string;
  event: { id: string; type: string; created_at: string; data: Record<string, unknown> };
}

/** Points the consumer at a recording endpoint answering `status()` (200 unless told). */
export function receiveWebhooks(status: (request: Request) => number = () => 200): ReceivedWebhook[] {
  const received: ReceivedWebhook[] = [];
  webhookReceiver.fetch = async (request) => {
    const body = await request.text();
    received.push({ url: request.url, headers: Object.fromEntries(request.headers), body, event: JSON.parse(body) });
    return new Response('', { status: status(request) });
  };
  return received;
}

/** Polls `check` until it answers something (not undefined/false), or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

type Body = Record<string, any>;

export async function developerRequest(testEnv: TestEnv, token: string, path: string, init: { json?: unknown; method?: string } = {}) {
  const response = await call(api(), testEnv, path, { ...init, token });
  return { status: response.status, body: (await response.json()) as Body };
}

/** A new endpoint of the developer's, subscribed to `eventTypes`; answers its id and secret. */
export async function addEndpoint(testEnv: TestEnv, token: string, eventTypes: string[], url = 'https://hooks.example.com/faucet') {
  const created = await developerRequest(testEnv, token, '/v1/developer/webhooks', { json: { url, event_types: eventTypes } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { id: created.body.id as string, secret: created.body.secret as string };
}

/** The endpoint's deliveries, newest first. */
export async function deliveriesOf(testEnv: TestEnv, token: string, endpointId: string): Promise<Body[]> {
  const listed = await developerRequest(testEnv, token, `/v1/developer/webhooks/${endpointId}/deliveries?limit=100`);
  expect(listed.status).toBe(200);
  return listed.body.data;
}
