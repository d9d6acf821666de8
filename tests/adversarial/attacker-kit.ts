/**
 * What an attacker's script does against a running stack, over real HTTP: get a session for a user
 * the demo app vouches for (the developer key, as the app's backend would), fund it, make platform
 * calls it can cut at any point, file local usage reports; and what the books say of each call.
 */
import pg from 'pg';
import { testSecrets } from '../setup/test-secrets.ts';

export interface AttackTarget {
  apiUrl: string;
  gatewayUrl: string;
  publicAppId: string;
  featureKey: string;
  adminToken: string;
  databaseUrl: string;
}

export interface Attacker {
  token: string;
  walletId: string;
  /** The user reference local usage reports name (user_id_hash): the session answer's user_ref. */
  userRef: string;
  /** The id the app knows the user by (what a guessable hash would be computed from). */
  externalUserId: string;
}

const json = (body: unknown) => ({ 'content-type': 'application/json', body: JSON.stringify(body) });

async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const { body: text, ...contentType } = json(body);
  const response = await fetch(url, { method: 'POST', headers: { ...contentType, ...headers }, body: text });
  return { status: response.status, body: (await response.json().catch(() => ({}))) as Record<string, unknown> };
}

/** A fresh end user of the demo app, its session minted by the app's backend, with `fundUsd` of test money. */
export async function newAttacker(target: AttackTarget, name: string, fundUsd: string): Promise<Attacker> {
  const externalUserId = `attacker-${name}-${crypto.randomUUID()}`;
  const session = await post(
    `${target.apiUrl}/v1/sessions`,
    { public_app_id: target.publicAppId, external_user_id: externalUserId },
    { authorization: `Bearer ${testSecrets.DEMO_DEVELOPER_KEY}` },
  );
  if (session.status !== 201) throw new Error(`session: HTTP ${session.status}`);
  const token = session.body.session_token as string;
  const wallet = await fetch(`${target.apiUrl}/v1/user/wallet`, { headers: { authorization: `Bearer ${token}` } });
  const walletId = ((await wallet.json()) as { wallet_id: string }).wallet_id;
  if (fundUsd !== '0.00000000') {
    const credit = await post(
      `${target.apiUrl}/v1/admin/wallets/${walletId}/credit-test-balance`,
      { amount_usd: fundUsd },
      { authorization: `Bearer ${target.adminToken}` },
    );
    if (credit.status !== 201 && credit.status !== 200) throw new Error(`credit: HTTP ${credit.status}`);
  }
  return { token, walletId, userRef: session.body.user_ref as string, externalUserId };
}

export async function walletOf(
  target: AttackTarget,
  attacker: Attacker,
): Promise<{ balance_usd: string; held_usd: string; available_usd: string }> {
  const response = await fetch(`${target.apiUrl}/v1/user/wallet`, { headers: { authorization: `Bearer ${attacker.token}` } });
  return (await response.json()) as { balance_usd: string; held_usd: string; available_usd: string };
}

/** Where a streamed call is cut by its client. */
export type AbortPoint = 'never' | 'before_headers' | 'after_role' | 'mid_content' | 'after_last_content';

export interface CallResult {
  status: number;
  code: string | null;
  callId: string | null;
  /** Content the attacker received. */
  content: string;
  /** The charge the gateway announced (`faucet.charge.amount_usd`), if the attacker saw one. */
  chargedUsd: string | null;
  /** What ended the exchange from the attacker's side. */
  ending: string;
  /** The `retry-after` header of the answer, if any. */
  retryAfter: string | null;
  /** `faucet.attempts` of the answer (or of the stream's `faucet.usage` event), when it listed them. */
  attempts: Attempt[] | null;
}

/** One entry of `faucet.attempts` (docs/models.md, "Fallback and aliases"). */
export interface Attempt {
  model: string;
  provider: string;
  outcome: string;
  status?: number;
  error_code?: string;
}

export interface ChatOptions {
  requestId?: string;
  stream?: boolean;
  abortAt?: AbortPoint;
  /** For `before_headers`: abort after this many ms. */
  abortAfterMs?: number;
  /** Further request headers the attacker sends. */
  headers?: Record<string, string>;
}

/** One gateway call as an attacker makes it, cut where asked. */
export async function attackChat(
  target: AttackTarget,
  attacker: Attacker,
  body: Record<string, unknown>,
  options: ChatOptions = {},
): Promise<CallResult> {
  const abortAt = options.abortAt ?? 'never';
  const controller = new AbortController();
  const headers: Record<string, string> = {
    ...options.headers,
    'content-type': 'application/json',
    authorization: `Bearer ${attacker.token}`,
  };
  if (options.requestId) headers['x-request-id'] = options.requestId;
  const stream = options.stream ?? false;
  const timer = abortAt === 'before_headers' ? setTimeout(() => controller.abort(), options.abortAfterMs ?? 300) : undefined;
  let response: Response;
  try {
    response = await fetch(`${target.gatewayUrl}/v1/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ feature: target.featureKey, ...body, stream }),
      signal: controller.signal,
    });
  } catch {
    return {
      status: 0,
      code: null,
      callId: null,
      content: '',
      chargedUsd: null,
      ending: 'aborted before headers',
      retryAfter: null,
      attempts: null,
    };
  } finally {
    clearTimeout(timer);
  }
  const callId = response.headers.get('x-faucet-call-id');
  const retryAfter = response.headers.get('retry-after');
  if (response.status !== 200 || !stream) {
    const parsed = (await response.json().catch(() => ({}))) as {
      error?: { code?: string };
      choices?: Array<{ message?: { content?: string } }>;
      faucet?: { charge?: { amount_usd?: string }; attempts?: Attempt[] };
    };
    return {
      status: response.status,
      code: parsed.error?.code ?? null,
      callId,
      content: parsed.choices?.map((choice) => choice.message?.content ?? '').join('') ?? '',
      chargedUsd: parsed.faucet?.charge?.amount_usd ?? null,
      ending: response.status === 200 ? 'complete' : `error ${parsed.error?.code}`,
      retryAfter,
      attempts: parsed.faucet?.attempts ?? null,
    };
  }
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let content = '';
  let chargedUsd: string | null = null;
  let attempts: Attempt[] | null = null;
  let sawRole = false;
  let contentChunks = 0;
  let ending = 'stream ended without [DONE]';
  const cut = async (why: string) => {
    ending = why;
    await reader.cancel().catch(() => undefined);
    controller.abort();
  };
  reading: for (;;) {
    const step = await reader.read().catch(() => ({ done: true as const, value: undefined }));
    if (step.done) break;
    buffer += decoder.decode(step.value, { stream: true });
    let boundary: number;
    while ((boundary = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, boundary).trim();
      buffer = buffer.slice(boundary + 2);
      if (!event.startsWith('data: ')) continue;
      const data = event.slice(6);
      if (data === '[DONE]') {
        ending = 'complete';
        break reading;
      }
      const parsed = JSON.parse(data) as {
        object?: string;
        error?: { code?: string };
        choices?: Array<{ delta?: { role?: string; content?: string }; finish_reason?: string | null }>;
        faucet?: { charge?: { amount_usd?: string }; attempts?: Attempt[] };
      };
      if (parsed.error) ending = `error event ${parsed.error.code}`;
      if (parsed.object === 'faucet.usage') {
        chargedUsd = parsed.faucet?.charge?.amount_usd ?? null;
        attempts = parsed.faucet?.attempts ?? null;
      }
      for (const choice of parsed.choices ?? []) {
        if (choice.delta?.role) sawRole = true;
        if (choice.delta?.content) {
          content += choice.delta.content;
          contentChunks += 1;
        }
        if (abortAt === 'after_last_content' && choice.finish_reason) {
          await cut('aborted after the last content chunk');
          break reading;
        }
      }
      if (abortAt === 'after_role' && sawRole) {
        await cut('aborted after the role chunk');
        break reading;
      }
      if (abortAt === 'mid_content' && contentChunks >= 2) {
        await cut('aborted mid-content');
        break reading;
      }
    }
  }
  return { status: 200, code: null, callId, content, chargedUsd, ending, retryAfter, attempts };
}

export interface LocalReportResult {
  status: number;
  code: string | null;
  chargedUsd: string | null;
}

/** A local usage report (the bridge's path) under a request id the attacker chose, naming `userRef` (by default their own). */
export async function reportLocalUsage(
  target: AttackTarget,
  attacker: Attacker,
  requestId: string,
  tokens: { input: number; output: number },
  userRef = attacker.userRef,
): Promise<LocalReportResult> {
  const outcome = await post(
    `${target.apiUrl}/v1/usage/local`,
    {
      request_id: requestId,
      public_app_id: target.publicAppId,
      user_id_hash: userRef,
      route_mode: 'local',
      provider: 'ollama',
      model: 'llama3',
      input_tokens: tokens.input,
      output_tokens: tokens.output,
      estimated: false,
      occurred_at: new Date().toISOString(),
    },
    { authorization: `Bearer ${attacker.token}` },
  );
  return {
    status: outcome.status,
    code: (outcome.body.error as { code?: string } | undefined)?.code ?? null,
    chargedUsd: (outcome.body.charge as { amount_usd?: string } | undefined)?.amount_usd ?? null,
  };
}

export interface Booking {
  /** The model the call was booked at (the answering attempt's, after a fallback). */
  model: string;
  /** The per-million input and output prices it was rated with. */
  inputPricePerMtokUsd: string | null;
  outputPricePerMtokUsd: string | null;
  inputTokens: number;
  outputTokens: number;
  retailUsd: string;
  estimated: boolean;
  receivableUsd: string;
}

/** Direct reads of the books (the attacker cannot do these; the suite checks with them). */
export class Books {
  private readonly pool: pg.Pool;

  constructor(databaseUrl: string) {
    this.pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  }

  async bookingsOf(callId: string | null): Promise<Booking[]> {
    if (callId === null) return [];
    const { rows } = await this.pool.query(
      `select model, input_price_per_mtok_usd::text, output_price_per_mtok_usd::text, input_tokens, output_tokens, retail_usd::text,
              estimated, receivable_usd::text
         from usage_events where call_id = $1`,
      [callId],
    );
    return rows.map((row: Record<string, unknown>) => ({
      model: row.model as string,
      inputPricePerMtokUsd: row.input_price_per_mtok_usd as string | null,
      outputPricePerMtokUsd: row.output_price_per_mtok_usd as string | null,
      inputTokens: row.input_tokens as number,
      outputTokens: row.output_tokens as number,
      retailUsd: row.retail_usd as string,
      estimated: row.estimated as boolean,
      receivableUsd: row.receivable_usd as string,
    }));
  }

  /** How many usage events a local report under `requestId` (the client's id) wrote, for any user. */
  async localReportsUnder(requestId: string): Promise<number> {
    const { rows } = await this.pool.query(`select count(*)::int as n from usage_events where client_request_id = $1`, [requestId]);
    return rows[0].n as number;
  }

  async callStatus(callId: string | null): Promise<string | null> {
    if (callId === null) return null;
    const { rows } = await this.pool.query(`select status from gateway_calls where id = $1`, [callId]);
    return (rows[0]?.status as string | undefined) ?? null;
  }

  async inFlightCalls(): Promise<number> {
    const { rows } = await this.pool.query(`select count(*)::int as n from gateway_calls where status = 'in_flight'`);
    return rows[0].n as number;
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

export function describeBooking(bookings: Booking[]): string {
  if (bookings.length === 0) return 'nothing booked';
  return bookings
    .map(
      (booking) =>
        `${booking.inputTokens} in + ${booking.outputTokens} out tokens, ${booking.retailUsd} USD${booking.estimated ? ' (estimated)' : ''}${booking.receivableUsd !== '0.00000000' ? `, receivable ${booking.receivableUsd}` : ''}`,
    )
    .join('; ');
}
