/**
 * A transparent forwarder in front of the gateway that notes what reached it: each request's method,
 * path, `anthropic-beta` and the status it was answered with. A client that quietly retries what
 * the gateway refused (Claude Code drops a refused beta or field and asks again) would otherwise
 * hide the refusal behind a passing run. Bodies are piped untouched, streams included.
 */
import { createServer, request as forward } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ForwardedRequest {
  method: string;
  path: string;
  betas: string[];
  status: number;
}

export interface RecordingForwarder {
  /** The forwarder's origin, to give the client in place of the gateway's. */
  url: string;
  /** Every request forwarded so far, in the order their answers began. */
  requests: ForwardedRequest[];
  close(): Promise<void>;
}

export async function recordingForwarder(target: string): Promise<RecordingForwarder> {
  const origin = new URL(target);
  const requests: ForwardedRequest[] = [];
  const server = createServer((incoming, outgoing) => {
    const betas = String(incoming.headers['anthropic-beta'] ?? '')
      .split(',')
      .map((beta) => beta.trim())
      .filter((beta) => beta !== '');
    const upstream = forward(
      {
        host: origin.hostname,
        port: origin.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, host: origin.host },
      },
      (answer) => {
        requests.push({ method: incoming.method ?? '', path: incoming.url ?? '', betas, status: answer.statusCode ?? 0 });
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    upstream.on('error', () => {
      requests.push({ method: incoming.method ?? '', path: incoming.url ?? '', betas, status: 502 });
      outgoing.destroy();
    });
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
