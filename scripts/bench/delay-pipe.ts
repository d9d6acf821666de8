/**
 * A TCP pipe that delays every chunk by a one-way time in each direction, put in front of the local
 * database proxy to stand for the round trip between an edge location and the database region
 * (RTT = 2 × the one-way delay). The delay can be changed while the workers behind it keep running
 * (one stack, several RTTs); order is kept even across a change. The local connect itself is not
 * delayed, so a new connection's cost is its first bytes' round trips. It counts the connections
 * opened through it (each a database connection of a worker or Durable Object) and the round trips
 * started on them: a client send that opens a connection or follows the database's reply.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface DelayPipe {
  port: number;
  /** Connections opened through the pipe so far. */
  connections(): number;
  /** Round trips started so far: the client's turns to send (the WebSocket upgrade is the first of a connection). */
  roundTrips(): number;
  /** Sets the one-way delay for chunks that arrive from now on. */
  setOneWayDelay(ms: number): void;
  close(): Promise<void>;
}

/** `target` is read at each new connection, so the caller may fill in its port after starting the pipe. */
export async function startDelayPipe(target: { host: string; port: number }, oneWayMs: number): Promise<DelayPipe> {
  let delayMs = oneWayMs;
  let opened = 0;
  let turns = 0;
  const sockets = new Set<Socket>();

  const delayed = (from: Socket, to: Socket) => {
    // Each chunk leaves no earlier than the one before it, so lowering the delay cannot reorder bytes.
    let lastDue = 0;
    const forward = (act: () => void) => {
      const due = Math.max(performance.now() + delayMs, lastDue);
      lastDue = due;
      const wait = due - performance.now();
      if (wait <= 0) act();
      else setTimeout(act, wait);
    };
    from.on('data', (chunk) => forward(() => to.writable && to.write(chunk)));
    from.on('end', () => forward(() => to.end()));
  };

  const server: Server = createServer((client) => {
    opened += 1;
    const upstream = connect({ host: target.host, port: target.port });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('close', () => sockets.delete(socket));
    }
    let clientsTurn = false;
    client.on('data', () => {
      if (!clientsTurn) turns += 1;
      clientsTurn = true;
    });
    upstream.on('data', () => {
      clientsTurn = false;
    });
    delayed(client, upstream);
    delayed(upstream, client);
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
    connections: () => opened,
    roundTrips: () => turns,
    setOneWayDelay: (ms) => {
      delayMs = ms;
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
