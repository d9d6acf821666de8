/**
 * What the fake upstream's APIs (OpenAI chat completions and Responses, Anthropic Messages) share:
 * the provider's books (the log of answered and refused calls, a call accepted into them), its token
 * count, and the behaviour markers a prompt carries (listed in fake-openai-upstream.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface AnsweredCall {
  /** The `x-client-request-id` the gateway sent (its call id); null when it sent none. */
  callId: string | null;
  /** Which of the fake's APIs answered it. */
  api: 'chat.completions' | 'responses' | 'messages';
  model: string;
  stream: boolean;
  /** Every input token billed; for Messages the sum of `input_tokens` and the cache writes and reads. */
  inputTokens: number;
  outputTokens: number;
  /** `completed`: answered to the end; `client_gone`: the client left and generation stopped. */
  ending: 'completed' | 'client_gone' | 'open';
}

/** A request the fake refused with an error status (billed nothing). */
export interface RefusedCall {
  callId: string | null;
  api: AnsweredCall['api'];
  model: string;
  status: number;
}

/** The provider's side of the books, shared by both APIs. */
export interface FakeUpstreamBooks {
  answered: AnsweredCall[];
  refused: RefusedCall[];
  /** Calls whose answer is still being generated. */
  inFlight: number;
  /** `[fake:fail-once=KEY]` keys already refused once. */
  failedOnce: Set<string>;
}

export const pieces = { ascii: 'lorem ipsum ', cjk: '漢字かな', emoji: '🙂🎉' } as const;
type PieceKind = keyof typeof pieces;

export interface Behaviour {
  delayMs: number;
  chunks: number;
  everyMs: number;
  text: PieceKind;
  open: boolean;
  noUsage: boolean;
  failStatus: number | null;
  failOnceKey: string | null;
  failModel: { model: string; status: number } | null;
  /** Messages: the tool to call (`none`: answer in text although tools are given), and its input as JSON. */
  tool: string | null;
  toolInput: string | null;
}

/** Tokens a provider bills for a piece of text (see fake-openai-upstream.ts). */
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

/** The markers found anywhere in the prompt's text. */
export function behaviourOf(text: string): Behaviour {
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
    tool: marker('tool')?.[1] ?? null,
    toolInput: marker('input')?.[1] ?? null,
  };
}

/** `MODEL@STATUS` or `MODEL` (500). */
function failModelOf(value: string | undefined): Behaviour['failModel'] {
  if (value === undefined) return null;
  const [model = '', status] = value.split('@');
  return { model, status: status !== undefined && /^\d{3}$/.test(status) ? Number(status) : 500 };
}

/** The status a failure marker refuses this request with, or null to answer it (a fail-once key is spent here). */
export function refusalStatus(behaviour: Behaviour, model: string, books: FakeUpstreamBooks): number | null {
  const failOnce = behaviour.failOnceKey !== null && !books.failedOnce.has(behaviour.failOnceKey);
  if (failOnce) books.failedOnce.add(behaviour.failOnceKey!);
  const failModel = behaviour.failModel !== null && behaviour.failModel.model === model ? behaviour.failModel.status : null;
  if (behaviour.failStatus === null && !failOnce && failModel === null) return null;
  return failModel ?? behaviour.failStatus ?? 503;
}

export const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

/**
 * A call the fake accepts: its record joins the books now (the prompt is processed and billed,
 * whatever happens next) with no output yet, and `gone()` tells whether its client has left.
 */
export function acceptCall(
  response: ServerResponse,
  books: FakeUpstreamBooks,
  call: Omit<AnsweredCall, 'outputTokens' | 'ending'>,
): { record: AnsweredCall; gone(): boolean } {
  let gone = false;
  response.on('close', () => {
    if (!response.writableFinished) gone = true;
  });
  const record: AnsweredCall = { ...call, outputTokens: 0, ending: 'completed' };
  books.answered.push(record);
  books.inFlight += 1;
  return { record, gone: () => gone };
}

/** The call id the gateway sent with an upstream request (`x-client-request-id`), when it sent one. */
export function callIdOf(request: IncomingMessage): string | null {
  const header = request.headers['x-client-request-id'];
  return typeof header === 'string' ? header : null;
}

/**
 * An OpenAI-protocol call (chat completions, Responses) the fake is sent: refused as its prompt's
 * markers say (refusalStatus) — logged, answered in OpenAI's error envelope, a 429 with
 * `retry-after` — and then null; else accepted into the books (acceptCall).
 */
export function admitOpenAiCall(
  request: IncomingMessage,
  response: ServerResponse,
  books: FakeUpstreamBooks,
  behaviour: Behaviour,
  call: Omit<AnsweredCall, 'callId' | 'outputTokens' | 'ending'>,
): ReturnType<typeof acceptCall> | null {
  const callId = callIdOf(request);
  const status = refusalStatus(behaviour, call.model, books);
  if (status === null) return acceptCall(response, books, { callId, ...call });
  books.refused.push({ callId, api: call.api, model: call.model, status });
  response.writeHead(status, { 'content-type': 'application/json', ...(status === 429 ? { 'retry-after': '1' } : {}) });
  const type = status === 429 ? 'rate_limit_error' : 'server_error';
  response.end(JSON.stringify({ error: { message: 'fake upstream failure', type, code: null, param: null } }));
  return null;
}
