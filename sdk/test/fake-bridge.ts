import type { ServerResponse } from 'node:http';
import { sendError, sendJson, startFakeServer, type FakeServer, type RecordedRequest } from './fake-server.ts';

export interface FakeBridgeOptions {
  /** Answer `/usage/report` with 503 instead of 202. */
  reportsFailing?: boolean;
  /** Include `usage` in chat answers (default true). */
  reportTokenUsage?: boolean;
  upstreamReachable?: boolean;
  /** Stream the first chunk of a chat answer, then fall silent. */
  stallAfterFirstChunk?: boolean;
  /** Answer `/usage/report` with 400 invalid_request. */
  rejectReports?: boolean;
}

export interface FakeBridge {
  readonly url: string;
  readonly port: number;
  options: FakeBridgeOptions;
  /** Every request the bridge received, across restarts. */
  requests: RecordedRequest[];
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

/** A stand-in for `faucet-bridge` following the bridge contract, with an Ollama-like echo model. */
export async function startFakeBridge(options: FakeBridgeOptions = {}, port = 0): Promise<FakeBridge> {
  const requests: RecordedRequest[] = [];
  let server: FakeServer | undefined;

  const chat = (request: RecordedRequest, response: ServerResponse) => {
    const body = JSON.parse(request.body) as { model: string; messages: Array<{ content: string }>; stream?: boolean };
    const answer = `local echo: ${body.messages.at(-1)?.content ?? ''}`;
    const usage = bridge.options.reportTokenUsage === false ? undefined : { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
    if (!body.stream) {
      return sendJson(response, 200, {
        id: 'chatcmpl-local',
        object: 'chat.completion',
        created: 1,
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
        ...(usage ? { usage } : {}),
      });
    }
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const word of answer.split(/(?<= )/)) {
      response.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: word } }] })}\n\n`);
      if (bridge.options.stallAfterFirstChunk) return new Promise<void>(() => undefined);
    }
    if (usage) response.write(`data: ${JSON.stringify({ choices: [], usage })}\n\n`);
    response.end('data: [DONE]\n\n');
  };

  const handle = (request: RecordedRequest, response: ServerResponse) => {
    requests.push(request);
    if (request.path === '/health') return sendJson(response, 200, { status: 'ok', version: '0.1.0-fake' });
    if (request.path === '/models') return sendJson(response, 200, { object: 'list', data: [{ id: 'llama3.2:1b', provider: 'ollama' }] });
    if (request.path === '/diagnostics') {
      const reachable = bridge.options.upstreamReachable !== false;
      return sendJson(response, 200, {
        bound_address: `127.0.0.1:${bridge.port}`,
        loopback: true,
        upstream: { url: 'http://127.0.0.1:11434', kind: 'ollama', reachable, ...(reachable ? {} : { reason: 'connection refused' }) },
        outbox: { pending: 0 },
      });
    }
    if (request.path === '/v1/chat/completions') return chat(request, response);
    if (request.path === '/usage/report') {
      if (bridge.options.reportsFailing) return sendError(response, 503, 'upstream_error', 'bridge_req');
      if (bridge.options.rejectReports) return sendError(response, 400, 'invalid_request', 'bridge_req');
      const report = JSON.parse(request.body) as { request_id: string };
      return sendJson(response, 202, { status: 'queued', request_id: report.request_id });
    }
    sendError(response, 404, 'not_found', 'bridge_req');
  };

  const bridge: FakeBridge = {
    url: '',
    port,
    options,
    requests,
    async start() {
      server = await startFakeServer(handle, bridge.port);
      Object.assign(bridge, { url: server.url, port: server.port });
    },
    async stop() {
      await server?.close();
      server = undefined;
    },
  };
  await bridge.start();
  return bridge;
}
