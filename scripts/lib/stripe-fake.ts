/**
 * A local fake of the Stripe API for tests and the offline local stack. It speaks the REST shapes the
 * `stripe` package uses for `checkout.sessions.create` and `.retrieve` (form-encoded requests, JSON
 * objects and Stripe's error envelope), honours `Idempotency-Key`, and serves a stand-in for the
 * hosted checkout page whose "Pay" button completes the session and delivers a signed
 * `checkout.session.completed` to the configured webhook, like Stripe would.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkoutSessionEvent, randomStripeId, signStripePayload, type CheckoutSessionSnapshot } from './stripe-events.ts';
import { decodeStripeForm, type FormObject, type FormValue } from './stripe-form.ts';

export interface StripeFakeOptions {
  port?: number;
  /** Where the "Pay" button delivers the completion event (e.g. the API's webhook URL). */
  webhook?: { url: string; secret: string };
}

export interface FakeCheckoutSession extends CheckoutSessionSnapshot {
  object: 'checkout.session';
  url: string;
  success_url: string | null;
  cancel_url: string | null;
  livemode: false;
  created: number;
  expires_at: number;
}

export interface StripeFake {
  url: string;
  port: number;
  sessions: Map<string, FakeCheckoutSession>;
  /** Every API request received: method, path and the decoded form body. */
  requests: { method: string; path: string; body: FormObject }[];
  /** Marks a session paid and delivers its signed completion event; returns the webhook's status. */
  pay(sessionId: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * The local stack talks to this fake unless `.dev.vars` holds a real Stripe test key: the generated
 * placeholder (`sk_test_local_placeholder`) and the test suites' keys name themselves as such.
 */
export function usesFakeStripe(secretKey: string | undefined): boolean {
  return !secretKey || /placeholder|fake/.test(secretKey);
}

class StripeApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly param?: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

const text = (value: FormValue | undefined): string | undefined => (typeof value === 'string' ? value : undefined);
const object = (value: FormValue | undefined): FormObject => (value && typeof value === 'object' && !Array.isArray(value) ? value : {});

function requireInteger(value: FormValue | undefined, param: string): number {
  const raw = text(value);
  if (!raw || !/^\d+$/.test(raw)) throw new StripeApiError(400, 'invalid_request_error', `Invalid integer: ${raw ?? ''}`, param);
  return Number(raw);
}

function amountOfLineItems(form: FormObject): { amount: number; currency: string } {
  const items = form.line_items;
  if (!Array.isArray(items) || items.length === 0) {
    throw new StripeApiError(400, 'invalid_request_error', 'Missing required param: line_items.', 'line_items');
  }
  let amount = 0;
  let currency = '';
  items.forEach((item, index) => {
    const priceData = object(object(item).price_data);
    const itemCurrency = text(priceData.currency)?.toLowerCase();
    if (!itemCurrency)
      throw new StripeApiError(400, 'invalid_request_error', 'Missing currency', `line_items[${index}][price_data][currency]`);
    if (currency && currency !== itemCurrency) throw new StripeApiError(400, 'invalid_request_error', 'Currencies differ', 'line_items');
    currency = itemCurrency;
    const unitAmount = requireInteger(priceData.unit_amount, `line_items[${index}][price_data][unit_amount]`);
    const quantity = requireInteger(object(item).quantity ?? '1', `line_items[${index}][quantity]`);
    amount += unitAmount * quantity;
  });
  return { amount, currency };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json', 'request-id': randomStripeId('req') });
  response.end(JSON.stringify(body));
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

export async function startStripeFake(options: StripeFakeOptions = {}): Promise<StripeFake> {
  const sessions = new Map<string, FakeCheckoutSession>();
  const requests: StripeFake['requests'] = [];
  const idempotent = new Map<string, { status: number; body: unknown }>();
  let baseUrl = '';

  function createSession(form: FormObject): FakeCheckoutSession {
    if (text(form.mode) !== 'payment') throw new StripeApiError(400, 'invalid_request_error', 'Only mode=payment is faked', 'mode');
    const { amount, currency } = amountOfLineItems(form);
    const id = randomStripeId('cs_test');
    const created = Math.floor(Date.now() / 1000);
    const session: FakeCheckoutSession = {
      id,
      object: 'checkout.session',
      amount_subtotal: amount,
      amount_total: amount,
      currency,
      mode: 'payment',
      status: 'open',
      payment_status: 'unpaid',
      client_reference_id: text(form.client_reference_id) ?? null,
      metadata: Object.fromEntries(Object.entries(object(form.metadata)).map(([key, value]) => [key, String(value)])),
      success_url: text(form.success_url) ?? null,
      cancel_url: text(form.cancel_url) ?? null,
      url: `${baseUrl}/c/pay/${id}`,
      livemode: false,
      created,
      expires_at: created + 24 * 3600,
      payment_intent: null,
    };
    sessions.set(id, session);
    return session;
  }

  async function pay(sessionId: string): Promise<number> {
    const session = sessions.get(sessionId);
    if (!session) throw new Error(`no such checkout session: ${sessionId}`);
    session.status = 'complete';
    session.payment_status = 'paid';
    // Like Stripe, a paid session names the payment intent its charge, refunds and disputes belong to.
    session.payment_intent ??= randomStripeId('pi');
    if (!options.webhook) return 0;
    const payload = JSON.stringify(checkoutSessionEvent(session));
    const response = await fetch(options.webhook.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': await signStripePayload(payload, options.webhook.secret) },
      body: payload,
    });
    await response.arrayBuffer();
    return response.status;
  }

  async function api(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    const authorization = request.headers.authorization ?? '';
    if (!/^Bearer (sk|rk)_test_\S+$/.test(authorization)) {
      throw new StripeApiError(401, 'invalid_request_error', 'Invalid API Key provided (the fake accepts test-mode keys only).');
    }
    const body = decodeStripeForm(request.method === 'POST' ? await readBody(request) : '');
    requests.push({ method: request.method ?? 'GET', path, body });
    const idempotencyKey = request.headers['idempotency-key'];
    if (request.method === 'POST' && path === '/v1/checkout/sessions') {
      const key = typeof idempotencyKey === 'string' ? idempotencyKey : undefined;
      const replay = key ? idempotent.get(key) : undefined;
      if (replay) return sendJson(response, replay.status, replay.body);
      const session = createSession(body);
      if (key) idempotent.set(key, { status: 200, body: session });
      return sendJson(response, 200, session);
    }
    const retrieve = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(path);
    if (request.method === 'GET' && retrieve) {
      const session = sessions.get(decodeURIComponent(retrieve[1]!));
      if (!session) {
        throw new StripeApiError(404, 'invalid_request_error', `No such checkout.session: '${retrieve[1]}'`, 'session', 'resource_missing');
      }
      return sendJson(response, 200, session);
    }
    throw new StripeApiError(404, 'invalid_request_error', `Unrecognized request URL (${request.method}: ${path}).`);
  }

  async function hostedPage(request: IncomingMessage, response: ServerResponse, sessionId: string): Promise<void> {
    const session = sessions.get(sessionId);
    if (!session) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('No such checkout session');
      return;
    }
    if (request.method === 'POST') {
      const status = await pay(sessionId);
      const target = session.success_url ?? `${baseUrl}/c/pay/${sessionId}`;
      if (status >= 300) {
        response.writeHead(502, { 'content-type': 'text/plain' }).end(`The webhook answered ${status}`);
        return;
      }
      response.writeHead(303, { location: target }).end();
      return;
    }
    const amount = `${((session.amount_total ?? 0) / 100).toFixed(2)} ${session.currency?.toUpperCase()}`;
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(`<!doctype html><title>Fake Stripe Checkout</title>
<h1>Fake Stripe Checkout (test mode, no real money)</h1>
<p>Pay <strong>${escapeHtml(amount)}</strong> for session <code>${escapeHtml(session.id)}</code>: status ${escapeHtml(session.status ?? '')}.</p>
<form method="post"><button type="submit">Pay</button></form>`);
  }

  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://fake').pathname;
    const pay = /^\/c\/pay\/([^/]+)$/.exec(path);
    const handled = pay ? hostedPage(request, response, decodeURIComponent(pay[1]!)) : api(request, response, path);
    handled.catch((error: unknown) => {
      if (error instanceof StripeApiError) {
        sendJson(response, error.status, {
          error: {
            type: error.type,
            message: error.message,
            ...(error.param ? { param: error.param } : {}),
            ...(error.code ? { code: error.code } : {}),
          },
        });
        return;
      }
      sendJson(response, 500, { error: { type: 'api_error', message: 'fake Stripe failed' } });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  baseUrl = `http://127.0.0.1:${port}`;
  return {
    url: baseUrl,
    port,
    sessions,
    requests,
    pay,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
