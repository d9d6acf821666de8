/**
 * A fake OpenAI-compatible upstream on loopback, for the local stack (OPENAI_BASE_URL +
 * UPSTREAM_ALLOW_LOOPBACK): answers `POST /v1/chat/completions`, plain and SSE, and keeps the
 * provider's side of the books — every call it accepted, by the `x-client-request-id` the gateway
 * sent, with the tokens a real provider would bill for it. The upstream audit compares that log with
 * the ledger. The log is read in-process (`calls()`) or over HTTP (`GET /__calls`).
 *
 * Billing, like a provider: the input is billed once the request is accepted (even if the client
 * leaves before the answer); the output is what was generated until the end, or until it noticed
 * the client had gone. Token counts are realistic for a byte-level BPE: ~4 ASCII characters per
 * token, 1 per CJK character, 3 per emoji code point, never more than the UTF-8 bytes; each image at
 * its model's maximum.
 *
 * Behaviour is chosen per request by markers anywhere in the messages' text:
 *   [fake:delay=MS]     wait before answering (before the response headers)
 *   [fake:chunks=N]     content pieces to generate (default 3)
 *   [fake:every=MS]     pause between pieces (default 0)
 *   [fake:text=cjk|emoji|ascii]  what the pieces are made of (default ascii)
 *   [fake:open]         stream: after the content, stay open (no finish, no usage, no [DONE])
 *   [fake:no-usage]     report no usage (plain: no `usage`; stream: no usage chunk)
 *   [fake:fail=STATUS]  refuse with that HTTP status (not billed: nothing was accepted)
 *   [fake:fail-once=KEY] refuse with 503 the first request carrying KEY, answer the next ones
 *   [fake:fail-model=MODEL@STATUS]  refuse requests for that model (the body's `model`) with STATUS
 *                       (default 500; a 429 carries `retry-after: 1`), answer other models: a
 *                       feature's fallback sends the same messages to its next model
 *
 * Refused requests are logged apart (`refused()`, `refused` of `GET /__calls`): the provider bills
 * them nothing, and the fallback scenarios check which attempts reached it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { imageTokenBound } from '#shared/providers/provider-catalog.ts';

export interface AnsweredCall {
  /** The `x-client-request-id` the gateway sent (its call id); null when it sent none. */
  callId: string | null;
  model: string;
  stream: boolean;
  inputTokens: number;
  outputTokens: number;
  /** `completed`: answered to the end; `client_gone`: the client left and generation stopped. */
  ending: 'completed' | 'client_gone' | 'open';
}

/** A request the fake refused with an error status (billed nothing). */
export interface RefusedCall {
  callId: string | null;
  model: string;
  status: number;
}

export interface FakeOpenAiUpstream {
  /** API root for OPENAI_BASE_URL, e.g. `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  /** For UPSTREAM_ALLOW_LOOPBACK. */
  hostPort: string;
  /** Every call accepted so far (billed by the provider), in order. */
  calls(): AnsweredCall[];
  /** Requests refused with an error status, in order. */
  refused(): RefusedCall[];
  /** Calls whose answer is still being generated. */
  inFlight(): number;
  close(): Promise<void>;
}

const pieces = { ascii: 'lorem ipsum ', cjk: '漢字かな', emoji: '🙂🎉' } as const;
type PieceKind = keyof typeof pieces;

interface Behaviour {
  delayMs: number;
  chunks: number;
  everyMs: number;
  text: PieceKind;
  open: boolean;
  noUsage: boolean;
  failStatus: number | null;
  failOnceKey: string | null;
  failModel: { model: string; status: number } | null;
}

/** Tokens a provider bills for a piece of text (see the file comment). */
export function providerTokens(text: string): number {
  let tokens = 0;
  let asciiRun = 0;
  const flushAscii = () => {
    tokens += Math.ceil(asciiRun / 4);
    asciiRun = 0;
  };
  for (const character of text) {
    const code = character.codePointAt(0)!;
    if (code < 0x80) {
      asciiRun += 1;
      continue;
    }
    flushAscii();
    // Emoji and other pictographs are split by byte-level BPE into several tokens; CJK and the rest take about one.
    tokens += /\p{Extended_Pictographic}/u.test(character) ? 3 : 1;
  }
  flushAscii();
  return tokens;
}

interface Message {
  role?: string;
  content?: unknown;
  name?: string;
  tool_calls?: unknown;
}

interface Body {
  model?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages?: Message[];
  tools?: unknown;
  functions?: unknown;
  max_tokens?: number;
  max_completion_tokens?: number;
}

function textOf(message: Message): string {
  if (typeof message.content === 'string') return message.content;
  if (!Array.isArray(message.content)) return '';
  return message.content.map((part: { type?: string; text?: string }) => (part.type === 'text' ? (part.text ?? '') : '')).join('');
}

function imagesOf(message: Message): number {
  return Array.isArray(message.content) ? message.content.filter((part: { type?: string }) => part.type === 'image_url').length : 0;
}

/** The prompt as a provider counts it: framing per message, text, images at their maximum, tools. */
function inputTokensOf(body: Body): number {
  const messages = body.messages ?? [];
  const imageTokens = imageTokenBound('openai', body.model ?? '') ?? 765;
  let tokens = 3;
  for (const message of messages) {
    tokens += 3 + providerTokens(message.role ?? '') + providerTokens(textOf(message)) + providerTokens(message.name ?? '');
    tokens += imagesOf(message) * imageTokens;
    if (message.tool_calls !== undefined) tokens += providerTokens(JSON.stringify(message.tool_calls));
  }
  for (const list of [body.tools, body.functions]) {
    if (list !== undefined) tokens += providerTokens(JSON.stringify(list));
  }
  return tokens;
}

function behaviourOf(body: Body): Behaviour {
  const text = (body.messages ?? []).map(textOf).join('\n');
  const marker = (name: string) => new RegExp(`\\[fake:${name}(?:=([^\\]]*))?\\]`).exec(text);
  const number = (name: string, fallback: number) => {
    const match = marker(name);
    return match?.[1] !== undefined && /^\d+$/.test(match[1]) ? Number(match[1]) : fallback;
  };
  const kind = marker('text')?.[1];
  return {
    delayMs: number('delay', 0),
    chunks: number('chunks', 3),
    everyMs: number('every', 0),
    text: kind === 'cjk' || kind === 'emoji' ? kind : 'ascii',
    open: marker('open') !== null,
    noUsage: marker('no-usage') !== null,
    failStatus: marker('fail') === null ? null : number('fail', 500),
    failOnceKey: marker('fail-once')?.[1] ?? null,
    failModel: failModelOf(marker('fail-model')?.[1]),
  };
}

/** `MODEL@STATUS` or `MODEL` (500). */
function failModelOf(value: string | undefined): Behaviour['failModel'] {
  if (value === undefined) return null;
  const [model = '', status] = value.split('@');
  return { model, status: status !== undefined && /^\d{3}$/.test(status) ? Number(status) : 500 };
}

const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

export async function startFakeOpenAiUpstream(options: { port?: number } = {}): Promise<FakeOpenAiUpstream> {
  const answered: AnsweredCall[] = [];
  const refused: RefusedCall[] = [];
  let inFlight = 0;
  const failedOnce = new Set<string>();

  async function chat(request: IncomingMessage, response: ServerResponse, body: Body): Promise<void> {
    const behaviour = behaviourOf(body);
    const failOnce = behaviour.failOnceKey !== null && !failedOnce.has(behaviour.failOnceKey);
    if (failOnce) failedOnce.add(behaviour.failOnceKey!);
    const header = request.headers['x-client-request-id'];
    const failModel = behaviour.failModel !== null && behaviour.failModel.model === body.model ? behaviour.failModel.status : null;
    if (behaviour.failStatus !== null || failOnce || failModel !== null) {
      const status = failModel ?? behaviour.failStatus ?? 503;
      refused.push({ callId: typeof header === 'string' ? header : null, model: body.model ?? '', status });
      response.writeHead(status, { 'content-type': 'application/json', ...(status === 429 ? { 'retry-after': '1' } : {}) });
      response.end(
        JSON.stringify({ error: { message: 'fake upstream failure', type: status === 429 ? 'rate_limit_error' : 'server_error' } }),
      );
      return;
    }
    let clientGone = false;
    response.on('close', () => {
      if (!response.writableFinished) clientGone = true;
    });
    const record: AnsweredCall = {
      callId: typeof header === 'string' ? header : null,
      model: body.model ?? '',
      stream: body.stream === true,
      inputTokens: inputTokensOf(body),
      outputTokens: 0,
      ending: 'completed',
    };
    // Accepted: the prompt is processed and billed, whatever happens next.
    answered.push(record);
    inFlight += 1;
    try {
      await sleep(behaviour.delayMs);
      const limit = body.max_completion_tokens ?? body.max_tokens ?? 16_384;
      const id = `chatcmpl-fake-${answered.length}`;
      const created = Math.floor(Date.now() / 1000);
      /** Generates the next piece (billed as generated), or null when done or cut by max_tokens. */
      const generated: string[] = [];
      let finish: 'stop' | 'length' = 'stop';
      const nextPiece = (): string | null => {
        if (generated.length >= behaviour.chunks) return null;
        const piece = pieces[behaviour.text];
        if (record.outputTokens + providerTokens(piece) > limit) {
          finish = 'length';
          return null;
        }
        record.outputTokens += providerTokens(piece);
        generated.push(piece);
        return piece;
      };
      const usage = () => ({
        prompt_tokens: record.inputTokens,
        completion_tokens: record.outputTokens,
        total_tokens: record.inputTokens + record.outputTokens,
      });

      if (!record.stream) {
        while (!clientGone && nextPiece() !== null) await sleep(behaviour.everyMs);
        if (clientGone) {
          record.ending = 'client_gone';
          return;
        }
        const completion = {
          id,
          object: 'chat.completion',
          created,
          model: record.model,
          choices: [{ index: 0, message: { role: 'assistant', content: generated.join('') }, finish_reason: finish }],
          ...(behaviour.noUsage ? {} : { usage: usage() }),
        };
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify(completion));
        return;
      }

      if (clientGone) {
        record.ending = 'client_gone';
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const send = (value: unknown) => response.write(`data: ${typeof value === 'string' ? value : JSON.stringify(value)}\n\n`);
      const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
        id,
        object: 'chat.completion.chunk',
        created,
        model: record.model,
        choices: [{ index: 0, delta, finish_reason: finishReason }],
      });
      send(chunk({ role: 'assistant', content: '' }));
      for (;;) {
        await sleep(behaviour.everyMs);
        if (clientGone) break;
        const piece = nextPiece();
        if (piece === null) break;
        send(chunk({ content: piece }));
      }
      if (clientGone) {
        record.ending = 'client_gone';
        return;
      }
      if (behaviour.open) {
        record.ending = 'open';
        // Stays open until the client leaves; nothing more is generated.
        await new Promise<void>((resolve) => response.once('close', () => resolve()));
        record.ending = 'client_gone';
        return;
      }
      send(chunk({}, finish));
      if (body.stream_options?.include_usage === true && !behaviour.noUsage)
        send({ id, object: 'chat.completion.chunk', created, model: record.model, choices: [], usage: usage() });
      send('[DONE]');
      response.end();
    } finally {
      inFlight -= 1;
    }
  }

  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://fake');
    if (request.method === 'GET' && url.pathname === '/__calls') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ calls: answered, refused, in_flight: inFlight }));
      return;
    }
    if (request.method !== 'POST' || url.pathname !== '/v1/chat/completions') {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: 'not found', type: 'invalid_request_error' } }));
      return;
    }
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      let body: Body;
      try {
        body = JSON.parse(Buffer.concat(parts).toString('utf8')) as Body;
      } catch {
        response.writeHead(400, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: 'invalid JSON', type: 'invalid_request_error' } }));
        return;
      }
      chat(request, response, body).catch(() => response.destroy());
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    hostPort: `127.0.0.1:${port}`,
    calls: () => answered.map((call) => ({ ...call })),
    refused: () => refused.map((call) => ({ ...call })),
    inFlight: () => inFlight,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
