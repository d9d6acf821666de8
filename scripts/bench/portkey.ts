/**
 * Added latency beside `@portkey-ai/gateway`, measured the same way for both: one HTTP
 * client → the gateway → the same mock OpenAI-compatible upstream, an HTTP server on loopback that
 * answers at once. Faucet's gateway runs in workerd with its Durable Objects, by Miniflare directly
 * (gateway-miniflare.ts; the same gateway under `wrangler dev` is shown beside it), metering and
 * booking every call; Portkey runs on Node and meters nothing. The floor is the client calling the
 * upstream directly.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { freePort } from '../lib/ports.ts';

export interface MockUpstream {
  port: number;
  /** `performance.now()` of the last request's arrival. */
  lastArrival(): number;
  /** What the `probe` given at start read when the last request arrived (e.g. a counter of database round trips). */
  probeAtLastArrival(): number;
  close(): Promise<void>;
}

const completion = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'gpt-4o-mini',
  choices: [
    { index: 0, message: { role: 'assistant', content: 'Metered access lets users pay for what they use.' }, finish_reason: 'stop' },
  ],
  usage: { prompt_tokens: 20, completion_tokens: 11, total_tokens: 31 },
});

/** The other surfaces' answers, by path (gateway-surfaces.ts): each as its API writes it, the same words and usage. */
const text = 'Metered access lets users pay for what they use.';
const usage = { input_tokens: 20, output_tokens: 11 };
const otherAnswers: Record<string, string> = {
  '/v1/responses': JSON.stringify({
    id: 'resp_bench',
    object: 'response',
    created_at: 1_700_000_000,
    status: 'completed',
    model: 'gpt-4o-mini',
    output: [
      {
        type: 'message',
        id: 'msg_bench',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text, annotations: [] }],
      },
    ],
    usage: { ...usage, total_tokens: 31 },
  }),
  '/v1/messages': JSON.stringify({
    id: 'msg_bench',
    type: 'message',
    role: 'assistant',
    model: 'claude-haiku-4-5',
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage,
  }),
  '/v1/embeddings': JSON.stringify({
    object: 'list',
    data: [{ object: 'embedding', index: 0, embedding: Array.from({ length: 16 }, (_, index) => index / 16) }],
    model: 'text-embedding-3-small',
    usage: { prompt_tokens: 5, total_tokens: 5 },
  }),
};
/** Anthropic's stream of the same Message, with its `event:` names. */
const messageEvents = [
  [
    'message_start',
    {
      type: 'message_start',
      message: {
        ...JSON.parse(otherAnswers['/v1/messages']!),
        content: [],
        stop_reason: null,
        usage: { input_tokens: 20, output_tokens: 1 },
      },
    },
  ],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 11 } }],
  ['message_stop', { type: 'message_stop' }],
]
  .map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
  .join('');

/** The chat completion as OpenAI streams it: the message, the finish, the usage, `[DONE]`. */
const completionEvents = (() => {
  const { choices, usage: chatUsage, ...head } = JSON.parse(completion);
  const chunk = (fields: object) => `data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', ...fields })}\n\n`;
  return [
    chunk({ choices: [{ index: 0, delta: choices[0].message, finish_reason: null }] }),
    chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
    chunk({ choices: [], usage: chatUsage }),
    'data: [DONE]\n\n',
  ].join('');
})();

/** The Responses answer as OpenAI streams it: created, the text, completed. */
const responseEvents = (() => {
  const response = JSON.parse(otherAnswers['/v1/responses']!);
  const location = { item_id: 'msg_bench', output_index: 0, content_index: 0 };
  return [
    ['response.created', { response: { ...response, status: 'in_progress', output: [], usage: null } }],
    ['response.output_item.added', { output_index: 0, item: { ...response.output[0], status: 'in_progress', content: [] } }],
    ['response.content_part.added', { ...location, part: { type: 'output_text', text: '', annotations: [] } }],
    ['response.output_text.delta', { ...location, delta: text }],
    ['response.output_text.done', { ...location, text }],
    ['response.content_part.done', { ...location, part: response.output[0].content[0] }],
    ['response.output_item.done', { output_index: 0, item: response.output[0] }],
    ['response.completed', { response }],
  ]
    .map(([type, data], index) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: index, ...(data as object) })}\n\n`)
    .join('');
})();

/**
 * The answer to a request at `path` (the chat completion unless another surface's path), streamed when
 * asked, as a provider streams: Faucet reads a call it holds for a quota as a stream (docs/quota.md).
 */
function answerOf(path: string, body: string): { type: string; text: string } {
  const streamed = body.includes('"stream":true');
  const answer = otherAnswers[path];
  if (answer === undefined)
    return streamed ? { type: 'text/event-stream', text: completionEvents } : { type: 'application/json', text: completion };
  if (path === '/v1/messages' && streamed) return { type: 'text/event-stream', text: messageEvents };
  if (path === '/v1/responses' && streamed) return { type: 'text/event-stream', text: responseEvents };
  return { type: 'application/json', text: answer };
}

export async function startMockUpstream(probe: () => number = () => 0): Promise<MockUpstream> {
  let arrival = 0;
  let probed = 0;
  const server: Server = createServer((request, response) => {
    arrival = performance.now();
    probed = probe();
    const path = (request.url ?? '').split('?')[0]!;
    const chunks: Buffer[] = [];
    // Every body is read, for its `stream`.
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const answer = answerOf(path, Buffer.concat(chunks).toString());
      // A stream goes chunked, as a provider sends one; a JSON answer with its length.
      const streamed = answer.type === 'text/event-stream';
      response.writeHead(200, { 'content-type': answer.type, ...(streamed ? {} : { 'content-length': Buffer.byteLength(answer.text) }) });
      response.end(answer.text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    lastArrival: () => arrival,
    probeAtLastArrival: () => probed,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export interface Portkey {
  url: string;
  stop(): Promise<void>;
}

/** Portkey's gateway on Node (its published `start-server.js`), headless, on a free port. */
export async function startPortkey(): Promise<Portkey> {
  const port = await freePort();
  const require = createRequire(import.meta.url);
  const entry = join(dirname(require.resolve('@portkey-ai/gateway/package.json')), 'build', 'start-server.js');
  const child: ChildProcess = spawn(process.execPath, [entry, `--port=${port}`, '--headless'], {
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += String(chunk)));
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; ; attempt++) {
    try {
      if ((await fetch(`${url}/`)).ok) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || attempt > 100) throw new Error(`Portkey did not start: ${stderr.slice(-500)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Headers that send a Portkey call to the mock upstream as a custom host of `provider` (OpenAI's by default). */
export function portkeyHeaders(upstream: MockUpstream, provider: 'openai' | 'anthropic' = 'openai'): Record<string, string> {
  return {
    'content-type': 'application/json',
    authorization: 'Bearer sk-bench-not-a-real-key',
    'x-portkey-provider': provider,
    'x-portkey-custom-host': `http://127.0.0.1:${upstream.port}/v1`,
  };
}
