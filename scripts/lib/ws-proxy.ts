/**
 * A WebSocket-to-TCP proxy in the shape of Neon's wsproxy (`/v1?address=host:port`), so that the
 * workers reach a local PostgreSQL through `@neondatabase/serverless` exactly as they reach Neon.
 * It also answers Neon's HTTP query endpoint (`POST /sql`: one statement per request, over
 * connections it keeps open, as Neon's proxy does), which the wallet objects use (docs/edge.md).
 * It only connects to loopback addresses; anything else is refused.
 */
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { createRequire } from 'node:module';
import type { IncomingMessage, ServerResponse } from 'node:http';
import pg from 'pg';
import type { WebSocket, WebSocketServer as WebSocketServerType } from 'ws';

// Loaded through require: under Vite (test global setup) a bare import of `ws` can resolve to its
// browser stub, which has no server.
const { WebSocketServer } = createRequire(import.meta.url)('ws') as { WebSocketServer: typeof WebSocketServerType };

export interface WsProxy {
  port: number;
  /** Cuts every open database connection (fault tests). */
  dropConnections(): void;
  close(): Promise<void>;
}

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '::1']);

export async function startWsProxy(options: { port?: number } = {}): Promise<WsProxy> {
  const pools = new Map<string, InstanceType<typeof pg.Pool>>();
  const http: Server = createServer((request, response) => {
    if (request.method === 'POST' && new URL(request.url ?? '/', 'http://proxy').pathname === '/sql') {
      void answerSql(request, response, pools);
      return;
    }
    response.writeHead(426).end('websocket only');
  });
  const wss = new WebSocketServer({ server: http });
  const open = new Set<{ ws: WebSocket; socket: Socket }>();

  wss.on('connection', (ws, request) => {
    const address = new URL(request.url ?? '/', 'http://proxy').searchParams.get('address') ?? '';
    const separator = address.lastIndexOf(':');
    const host = address.slice(0, separator);
    const port = Number(address.slice(separator + 1));
    if (!loopbackHosts.has(host) || !Number.isInteger(port) || port <= 0) {
      ws.close(1008, 'address not allowed');
      return;
    }
    const socket = connect({ host, port });
    const pair = { ws, socket };
    open.add(pair);
    socket.on('data', (chunk) => ws.readyState === ws.OPEN && ws.send(chunk));
    ws.on('message', (data) => socket.write(data as Buffer));
    const closeBoth = () => {
      open.delete(pair);
      socket.destroy();
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.terminate();
    };
    socket.on('close', closeBoth);
    socket.on('error', closeBoth);
    ws.on('close', closeBoth);
    ws.on('error', closeBoth);
  });

  await new Promise<void>((resolve) => http.listen(options.port ?? 0, '127.0.0.1', resolve));
  const address = http.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    dropConnections() {
      for (const { ws, socket } of open) {
        socket.destroy();
        ws.terminate();
      }
      open.clear();
    },
    close: () =>
      new Promise((resolve) => {
        for (const { ws, socket } of open) {
          socket.destroy();
          ws.terminate();
        }
        wss.close();
        for (const pool of pools.values()) void pool.end();
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}

/** Values as PostgreSQL sent them (the driver parses them by type, as it does Neon's answers). */
const rawText = { getTypeParser: () => (value: string) => value };

/** The fields of a PostgreSQL error Neon's endpoint answers with (status 400). */
const errorFields = ['severity', 'code', 'detail', 'hint', 'position', 'where', 'schema', 'table', 'column', 'constraint'] as const;

/**
 * One statement over a kept connection to the loopback PostgreSQL the `Neon-Connection-String`
 * header names, answered in Neon's HTTP format: field names and type ids, rows of raw text values.
 */
async function answerSql(request: IncomingMessage, response: ServerResponse, pools: Map<string, InstanceType<typeof pg.Pool>>) {
  const send = (status: number, body: unknown) =>
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const { query, params } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { query: string; params?: unknown[] };
    const connectionString = String(request.headers['neon-connection-string'] ?? '');
    if (!loopbackHosts.has(new URL(connectionString).hostname)) {
      send(400, { message: 'address not allowed' });
      return;
    }
    let pool = pools.get(connectionString);
    if (pool === undefined) {
      pool = new pg.Pool({ connectionString, max: 8 });
      pool.on('error', () => {});
      pools.set(connectionString, pool);
    }
    const result = await pool.query({ text: query, values: params ?? [], rowMode: 'array', types: rawText });
    send(200, {
      command: result.command,
      rowCount: result.rowCount,
      fields: result.fields.map((field) => ({ name: field.name, dataTypeID: field.dataTypeID })),
      rows: result.rows,
    });
  } catch (error) {
    const failure = error as Record<string, unknown>;
    send(400, {
      message: error instanceof Error ? error.message : 'query failed',
      ...Object.fromEntries(errorFields.filter((key) => failure[key] !== undefined).map((key) => [key, failure[key]])),
    });
  }
}
