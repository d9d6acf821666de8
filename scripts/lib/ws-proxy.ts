/**
 * A WebSocket-to-TCP proxy in the shape of Neon's wsproxy (`/v1?address=host:port`), so that the
 * workers reach a local PostgreSQL through `@neondatabase/serverless` exactly as they reach Neon.
 * It only connects to loopback addresses; anything else is refused.
 */
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { createRequire } from 'node:module';
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
  const http: Server = createServer((_request, response) => {
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
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
