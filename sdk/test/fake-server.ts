import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type FakeHandler = (request: RecordedRequest, response: ServerResponse) => void | Promise<void>;

export interface FakeServer {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Requests to one path, in arrival order. */
  requestsTo(path: string): RecordedRequest[];
  close(): Promise<void>;
}

/** A tiny HTTP server on 127.0.0.1 that records every request and lets the test answer it. */
export async function startFakeServer(handler: FakeHandler, port = 0): Promise<FakeServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer(async (incoming, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const request = {
      method: incoming.method ?? 'GET',
      path: incoming.url ?? '/',
      headers: incoming.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
    response.setHeader('access-control-allow-origin', '*');
    response.setHeader('access-control-allow-headers', 'authorization, content-type, x-request-id');
    response.setHeader('access-control-expose-headers', 'x-request-id, retry-after');
    if (request.method === 'OPTIONS') {
      response.writeHead(204).end();
      return;
    }
    requests.push(request);
    try {
      await handler(request, response);
    } catch (error) {
      if (!response.headersSent) response.writeHead(599).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actualPort = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actualPort}`,
    port: actualPort,
    requests,
    requestsTo: (path) => requests.filter((request) => request.path.split('?')[0] === path),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

export function sendError(
  response: ServerResponse,
  status: number,
  code: string,
  requestId: string,
  headers: Record<string, string> = {},
): void {
  sendJson(
    response,
    status,
    { error: { code, message: `${code} (fake)`, request_id: requestId } },
    { 'x-request-id': requestId, ...headers },
  );
}
