import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { sendError, sendJson, startFakeServer, type FakeServer, type RecordedRequest } from './fake-server.ts';

/**
 * An in-process stand-in for the control API and the gateway (one server for both) that follows
 * the wire contract: sessions with a TTL, wallet, usage, and `mock:echo` chat with a fixed charge.
 */
export interface FakeFaucet extends FakeServer {
  publicAppId: string;
  /** Session tokens handed out so far. */
  sessions: string[];
  /** Makes every outstanding token invalid, as if the server had expired them. */
  expireAllSessions(): void;
  /** Top-ups started through `POST /v1/user/stripe/checkout-sessions`, by id. */
  checkouts: Map<string, { amountCents: number; status: 'pending' | 'completed' | 'expired' }>;
  /** What Stripe's webhook does for a paid checkout: marks it completed and credits the wallet. */
  completeCheckout(id: string): void;
}

const chargeUnits = 1234n; // 0.00001234 USD per call
const scale = 100_000_000n;

function formatUsd(units: bigint): string {
  return `${units / scale}.${(units % scale).toString().padStart(8, '0')}`;
}

export async function startFakeFaucet(options: { sessionTtlSeconds?: number } = {}): Promise<FakeFaucet> {
  const publicAppId = 'app_fake_demo';
  const ttlMs = (options.sessionTtlSeconds ?? 3600) * 1000;
  const sessions: string[] = [];
  const valid = new Map<string, number>();
  let balance = 10n * scale;
  const usage: Array<Record<string, unknown>> = [];
  let counter = 0;
  const checkouts: FakeFaucet['checkouts'] = new Map();

  const authorized = (request: RecordedRequest): boolean => {
    const token = /^Bearer (.+)$/.exec(String(request.headers.authorization ?? ''))?.[1];
    const expiresAt = token ? valid.get(token) : undefined;
    return expiresAt !== undefined && Date.now() < expiresAt;
  };

  const chat = (request: RecordedRequest, response: ServerResponse, requestId: string) => {
    const body = JSON.parse(request.body) as { model?: string; feature?: string; messages: Array<{ content: string }>; stream?: boolean };
    if (body.feature !== 'chat') return sendError(response, 404, 'not_found', requestId);
    if (body.model !== undefined && body.model !== 'mock:echo') return sendError(response, 400, 'invalid_request', requestId);
    const answer = `echo: ${body.messages.at(-1)?.content ?? ''}`;
    balance -= chargeUnits;
    const faucet = {
      request_id: requestId,
      route_mode: 'platform',
      provider: 'mock',
      model: 'echo',
      input_tokens: 3,
      output_tokens: 4,
      estimated: false,
      charge: { currency: 'USD', amount_usd: formatUsd(chargeUnits), upstream_cost_usd: '0.00001000' },
    };
    usage.unshift({
      request_id: requestId,
      feature_key: 'chat',
      route_mode: 'platform',
      provider: 'mock',
      model: 'echo',
      input_tokens: 3,
      output_tokens: 4,
      estimated: false,
      charged_usd: formatUsd(chargeUnits),
      created_at: new Date().toISOString(),
    });
    if (!body.stream) {
      return sendJson(
        response,
        200,
        {
          id: `chatcmpl-${requestId}`,
          object: 'chat.completion',
          created: 1,
          model: 'mock:echo',
          choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
          faucet,
        },
        { 'x-request-id': requestId },
      );
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': requestId });
    for (const word of answer.split(/(?<= )/)) {
      response.write(`data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: word } }] })}\n\n`);
      // A message containing STALL gets its first word, then silence: for tests of the stop button.
      if (answer.includes('STALL')) return;
    }
    // The upstream's last chunk, as the gateway passes it on: no content, the finish reason.
    response.write(
      `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`,
    );
    // Shaped like the gateway's (workers/gateway/src/streaming/metered-stream.ts): a chunk with no choices.
    const usageEvent = { id: requestId, object: 'faucet.usage', created: 1, model: 'mock:echo', choices: [], faucet };
    response.write(`data: ${JSON.stringify(usageEvent)}\n\n`);
    response.end('data: [DONE]\n\n');
  };

  const server = await startFakeServer((request, response) => {
    const requestId = String(request.headers['x-request-id'] ?? `req_fake_${++counter}`);
    const path = request.path.split('?')[0];
    if (request.method === 'POST' && path === '/v1/sessions') {
      const body = JSON.parse(request.body) as { public_app_id?: string };
      if (body.public_app_id !== publicAppId) return sendError(response, 404, 'not_found', requestId);
      const token = `fvs_fakesession${String(sessions.length + 1).padStart(8, '0')}`;
      sessions.push(token);
      valid.set(token, Date.now() + ttlMs);
      // The real server's user_ref is an HMAC under its secret; any value the client cannot derive will do here.
      const userRef = createHash('sha256').update(`fake-server-secret:${request.body}`).digest('hex');
      return sendJson(response, 201, {
        session_token: token,
        token_type: 'Bearer',
        expires_at: new Date(Date.now() + ttlMs).toISOString(),
        session_id: `00000000-0000-4000-8000-${String(sessions.length).padStart(12, '0')}`,
        user_ref: userRef,
      });
    }
    if (!authorized(request)) return sendError(response, 401, 'unauthorized', requestId);
    if (request.method === 'GET' && path === '/v1/user/wallet') {
      return sendJson(response, 200, {
        wallet_id: 'wal_fake',
        currency: 'USD',
        balance_usd: formatUsd(balance),
        held_usd: '0.00000000',
        available_usd: formatUsd(balance),
      });
    }
    if (request.method === 'GET' && path === '/v1/user/usage') {
      const receiptOf = new URLSearchParams(request.path.split('?')[1] ?? '').get('request_id');
      const data = receiptOf === null ? usage.slice(0, 20) : usage.filter((record) => record.request_id === receiptOf);
      return sendJson(response, 200, { data });
    }
    if (request.method === 'POST' && path === '/v1/user/stripe/checkout-sessions') {
      const body = JSON.parse(request.body) as { amount_usd?: string; return_url?: string };
      const amount = /^(\d{1,4})\.(\d{2})000000$/.exec(body.amount_usd ?? '');
      const amountCents = amount ? Number(amount[1]) * 100 + Number(amount[2]) : 0;
      if (amountCents < 100 || amountCents > 100_000) return sendError(response, 400, 'invalid_request', requestId);
      const id = `cs_test_fake${checkouts.size + 1}`;
      checkouts.set(id, { amountCents, status: 'pending' });
      return sendJson(response, 201, {
        checkout_session_id: id,
        url: `https://checkout.stripe.test/pay/${id}?return=${encodeURIComponent(body.return_url ?? '')}`,
        amount_usd: body.amount_usd,
        amount_cents: amountCents,
        currency: 'USD',
        status: 'pending',
        expires_at: null,
      });
    }
    const checkoutPath = /^\/v1\/user\/stripe\/checkout-sessions\/([^/]+)$/.exec(path ?? '');
    if (request.method === 'GET' && checkoutPath) {
      const id = decodeURIComponent(checkoutPath[1]!);
      const checkout = checkouts.get(id);
      if (!checkout) return sendError(response, 404, 'not_found', requestId);
      return sendJson(response, 200, {
        checkout_session_id: id,
        amount_usd: formatUsd(BigInt(checkout.amountCents) * 1_000_000n),
        amount_cents: checkout.amountCents,
        currency: 'USD',
        status: checkout.status,
        created_at: new Date().toISOString(),
        completed_at: checkout.status === 'completed' ? new Date().toISOString() : null,
      });
    }
    if (request.method === 'POST' && path === '/v1/chat/completions') return chat(request, response, requestId);
    sendError(response, 404, 'not_found', requestId);
  });
  const completeCheckout = (id: string) => {
    const checkout = checkouts.get(id);
    if (checkout?.status !== 'pending') throw new Error(`no pending checkout ${id}`);
    checkout.status = 'completed';
    balance += BigInt(checkout.amountCents) * 1_000_000n;
  };
  return { ...server, publicAppId, sessions, expireAllSessions: () => valid.clear(), checkouts, completeCheckout };
}
