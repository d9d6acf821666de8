import type { IncomingHttpHeaders } from 'node:http';
import { listen, readBody, type Listening } from './listen';

export interface FakeUpstreamOptions {
  /** Send OpenAI `usage` (non-streaming) or the include_usage chunk (streaming). Default true. */
  reportUsage?: boolean;
  /** Cut the SSE stream after the first chunk without [DONE]. */
  breakStream?: boolean;
  /** Never answer chat requests. */
  hang?: boolean;
  /** Stream the first chunk, then wait this long before the rest. */
  pauseMidStreamMs?: number;
}

export interface FakeUpstream extends Listening {
  requests: Array<{ method: string; path: string; headers: IncomingHttpHeaders; body: any }>;
}

export const fakeModels = [
  { id: 'llama3.2:3b', object: 'model', owned_by: 'library' },
  { id: 'qwen2.5:0.5b', object: 'model' },
];

/**
 * An OpenAI-compatible model server on loopback: `/v1/models` and `/v1/chat/completions`
 * (plain and SSE) answering "Hello from the fake." with fixed token counts 11 / 5.
 */
export async function startFakeUpstream(options: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const reportUsage = options.reportUsage ?? true;
  const requests: FakeUpstream['requests'] = [];
  const listening = await listen(async (request, response) => {
    const text = await readBody(request);
    const body = text ? JSON.parse(text) : undefined;
    requests.push({ method: request.method ?? '', path: request.url ?? '', headers: request.headers, body });
    if (request.url === '/v1/models') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ object: 'list', data: fakeModels }));
      return;
    }
    if (request.url !== '/v1/chat/completions') {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: 'not here' } }));
      return;
    }
    if (body.model === 'missing-model') {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: `model "${body.model}" not found, try pulling it first` } }));
      return;
    }
    if (options.hang) return;
    const usage = { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 };
    if (!body.stream) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          id: 'chatcmpl-fake',
          object: 'chat.completion',
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fake.' }, finish_reason: 'stop' }],
          ...(reportUsage ? { usage } : {}),
        }),
      );
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: object, extra: object = {}) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', model: body.model, choices: [{ index: 0, delta }], ...extra })}\n\n`;
    if (options.breakStream) {
      response.write(chunk({ role: 'assistant', content: 'Hello ' }), () => response.socket?.destroy());
      return;
    }
    response.write(chunk({ role: 'assistant', content: 'Hello ' }));
    if (options.pauseMidStreamMs) await new Promise((resolve) => setTimeout(resolve, options.pauseMidStreamMs));
    response.write(chunk({ content: 'from the fake.' }));
    if (reportUsage && body.stream_options?.include_usage) {
      response.write(
        `data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', model: body.model, choices: [], usage })}\n\n`,
      );
    }
    response.end('data: [DONE]\n\n');
  });
  return { ...listening, requests };
}
