/**
 * A TCP pipe that delays every chunk by a fixed one-way time in each direction, put in front of the
 * local database proxy to stand for the round trip between an edge location and the database
 * region (RTT = 2 × the one-way delay). Order is kept (equal delays fire in arrival order); the
 * local connect itself is not delayed, so a new connection's cost is its first bytes' round trips.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface DelayPipe {
  port: number;
  close(): Promise<void>;
}

function delayed(from: Socket, to: Socket, oneWayMs: number): void {
  from.on('data', (chunk) => {
    if (oneWayMs === 0) to.write(chunk);
    else setTimeout(() => to.writable && to.write(chunk), oneWayMs);
  });
  from.on('end', () => setTimeout(() => to.end(), oneWayMs));
}

export async function startDelayPipe(target: { host: string; port: number }, oneWayMs: number): Promise<DelayPipe> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('close', () => sockets.delete(socket));
    }
    delayed(client, upstream, oneWayMs);
    delayed(upstream, client, oneWayMs);
    const destroyBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', destroyBoth);
    upstream.on('error', destroyBoth);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
