/**
 * A fake upstream on loopback for the local stack, one port for two providers (UPSTREAM_ALLOW_LOOPBACK
 * allows exactly one): OpenAI's `POST /v1/chat/completions` (OPENAI_BASE_URL), plain and SSE, its
 * `POST /v1/responses` (fake-openai-responses.ts: where the Responses surface goes natively), and
 * Anthropic's `POST /v1/messages` (ANTHROPIC_BASE_URL; thinking, tool use and prompt caching as
 * fake-anthropic-messages.ts describes). It keeps the provider's side of the books — every call it
 * accepted, by the `x-client-request-id` the gateway sent, with the API that answered it and the
 * tokens a real provider would bill for it. The upstream audit compares that log with the ledger. The
 * log is read in-process (`calls()`) or over HTTP (`GET /__calls`).
 *
 * Billing, like a provider: the input is billed once the request is accepted (even if the client
 * leaves before the answer); the output is what was generated until the end, or until it noticed
 * the client had gone. Token counts are realistic for a byte-level BPE: ~4 ASCII characters per
 * token, 1 per CJK character, 3 per emoji code point, never more than the UTF-8 bytes; each image at
 * its model's maximum.
 *
 * Behaviour is chosen per request by markers anywhere in the messages' text (both APIs but where said):
 *   [fake:delay=MS]     wait before answering (before the response headers)
 *   [fake:chunks=N]     content pieces to generate (default 3; Messages: of a plain text answer)
 *   [fake:every=MS]     pause between pieces (default 0)
 *   [fake:text=cjk|emoji|ascii]  what the pieces are made of (default ascii)
 *   [fake:open]         chat stream: after the content, stay open (no finish, no usage, no [DONE])
 *   [fake:no-usage]     chat: report no usage (plain: no `usage`; stream: no usage chunk)
 *   [fake:fail=STATUS]  refuse with that HTTP status (not billed: nothing was accepted)
 *   [fake:fail-once=KEY] refuse with 503 the first request carrying KEY, answer the next ones
 *   [fake:fail-model=MODEL@STATUS]  refuse requests for that model (the body's `model`) with STATUS
 *                       (default 500; a 429 carries `retry-after: 1`), answer other models: a
 *                       feature's fallback sends the same messages to its next model
 *   [fake:tool=NAME]    Messages with tools: call the tool NAME (`none`: answer in text instead)
 *   [fake:input=JSON]   Messages: the tool call's input, as written (else built from the tool's schema)
 *
 * Refused requests are logged apart (`refused()`, `refused` of `GET /__calls`): the provider bills
 * them nothing, and the fallback scenarios check which attempts reached it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { imageTokenBound } from '#shared/providers/provider-catalog.ts';
import { answerMessages, type MessagesBody, type PromptCache, sendAnthropicError } from './fake-anthropic-messages.ts';
import { answerResponses, type ResponsesBody } from './fake-openai-responses.ts';
import {
  admitOpenAiCall,
  type AnsweredCall,
  behaviourOf,
  type FakeUpstreamBooks,
  pieces,
  providerTokens,
  type RefusedCall,
  sleep,
} from './fake-upstream-kit.ts';

export interface FakeOpenAiUpstream {
  /** API root for OPENAI_BASE_URL, e.g. `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  /** The host for ANTHROPIC_BASE_URL as Anthropic's SDK names it (no `/v1`), e.g. `http://127.0.0.1:PORT`. */
  anthropicBaseUrl: string;
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

export async function startFakeOpenAiUpstream(options: { port?: number } = {}): Promise<FakeOpenAiUpstream> {
  const books: FakeUpstreamBooks = { answered: [], refused: [], inFlight: 0, failedOnce: new Set() };
  const { answered } = books;

  async function chat(request: IncomingMessage, response: ServerResponse, body: Body): Promise<void> {
    const behaviour = behaviourOf((body.messages ?? []).map(textOf).join('\n'));
    const accepted = admitOpenAiCall(request, response, books, behaviour, {
      api: 'chat.completions',
      model: body.model ?? '',
      stream: body.stream === true,
      inputTokens: inputTokensOf(body),
    });
    if (accepted === null) return;
    const { record } = accepted;
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
        while (!accepted.gone() && nextPiece() !== null) await sleep(behaviour.everyMs);
        if (accepted.gone()) {
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

      if (accepted.gone()) {
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
        if (accepted.gone()) break;
        const piece = nextPiece();
        if (piece === null) break;
        send(chunk({ content: piece }));
      }
      if (accepted.gone()) {
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
      books.inFlight -= 1;
    }
  }

  const promptCache: PromptCache = new Set();
  const routes: Record<string, (request: IncomingMessage, response: ServerResponse, body: unknown) => Promise<void>> = {
    '/v1/chat/completions': (request, response, body) => chat(request, response, body as Body),
    '/v1/messages': (request, response, body) => answerMessages(request, response, body as MessagesBody, books, promptCache),
    '/v1/responses': (request, response, body) => answerResponses(request, response, body as ResponsesBody, books),
  };

  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://fake');
    if (request.method === 'GET' && url.pathname === '/__calls') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ calls: answered, refused: books.refused, in_flight: books.inFlight }));
      return;
    }
    const route = request.method === 'POST' ? routes[url.pathname] : undefined;
    if (route === undefined) {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: 'not found', type: 'invalid_request_error' } }));
      return;
    }
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(parts).toString('utf8'));
      } catch {
        if (url.pathname === '/v1/messages') return sendAnthropicError(response, 400, 'invalid JSON');
        response.writeHead(400, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: 'invalid JSON', type: 'invalid_request_error' } }));
        return;
      }
      route(request, response, body).catch(() => response.destroy());
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    anthropicBaseUrl: `http://127.0.0.1:${port}`,
    hostPort: `127.0.0.1:${port}`,
    calls: () => answered.map((call) => ({ ...call })),
    refused: () => books.refused.map((call) => ({ ...call })),
    inFlight: () => books.inFlight,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
