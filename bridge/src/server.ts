import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BridgeServices } from './context';
import { allowedHostHeaders } from './http/host-guard';
import { isLoopbackHost } from './http/loopback';
import { createLogger, type Logger } from './log';
import { Forwarder } from './outbox/forwarder';
import { OutboxStore } from './outbox/outbox-store';
import { handleRequest } from './handle-request';
import { defaultCandidates, type DetectCandidate, type Upstream } from './upstream/upstream-kind';
import { UpstreamResolver } from './upstream/upstream-resolver';

export interface BridgeOptions {
  port: number;
  host: string;
  /** Must be true to bind anything but a loopback address. */
  allowNonLoopback: boolean;
  upstream?: Upstream;
  upstreamApiKey?: string;
  /** Where to look when no upstream is given; defaults to Ollama, LM Studio, llama.cpp on their ports. */
  detectCandidates?: DetectCandidate[];
  apiBaseUrl?: string;
  allowedOrigins: string[];
  outboxDirectory: string;
  log?: Logger;
  retry?: { baseMs: number; maxMs: number };
  upstreamTimeoutMs?: number;
  limits?: { chatBodyBytes: number; reportBodyBytes: number };
}

export interface RunningBridge {
  url: string;
  port: number;
  services: BridgeServices;
  /** Stops accepting, lets running requests finish (up to `graceMs`), then stops forwarding. */
  close(graceMs?: number): Promise<void>;
}

export class NonLoopbackRefusedError extends Error {}

export async function startBridge(options: BridgeOptions): Promise<RunningBridge> {
  const loopback = isLoopbackHost(options.host);
  if (!loopback && !options.allowNonLoopback) {
    throw new NonLoopbackRefusedError(
      `Refusing to listen on ${options.host}: it is not a loopback address, so other machines could use your models. ` +
        'Pass --allow-non-loopback if you really mean it.',
    );
  }
  const log = options.log ?? createLogger();
  if (!loopback)
    log.warn('listening on a non-loopback address: other machines on the network can reach this bridge', { host: options.host });

  const outbox = new OutboxStore(options.outboxDirectory);
  await outbox.init();
  const apiBaseUrl = options.apiBaseUrl?.replace(/\/+$/, '');
  const forwarder = new Forwarder({
    store: outbox,
    apiBaseUrl,
    backoff: options.retry ?? { baseMs: 1000, maxMs: 5 * 60_000 },
    requestTimeoutMs: 30_000,
    log,
  });
  const services: BridgeServices = {
    log,
    upstream: new UpstreamResolver({
      explicit: options.upstream,
      candidates: options.detectCandidates ?? defaultCandidates,
      probeTimeoutMs: 1000,
      apiKey: options.upstreamApiKey,
    }),
    upstreamApiKey: options.upstreamApiKey,
    upstreamTimeoutMs: options.upstreamTimeoutMs ?? 300_000,
    outbox,
    forwarder,
    apiBaseUrl,
    limits: options.limits ?? { chatBodyBytes: 8 * 1024 * 1024, reportBodyBytes: 16 * 1024 },
    bound: { host: options.host, port: options.port, loopback },
  };
  const allowedOrigins = new Set(options.allowedOrigins.map((origin) => origin.toLowerCase()));
  let allowedHosts = new Set<string>();

  const server = createServer((request, response) => {
    void handleRequest(request, response, services, allowedHosts, allowedOrigins);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  services.bound.port = port;
  allowedHosts = allowedHostHeaders(options.host, port);
  forwarder.wake();
  log.info('bridge listening', { address: `${options.host}:${port}`, forwarding: apiBaseUrl !== undefined });

  return {
    url: `http://${loopback ? '127.0.0.1' : options.host}:${port}`,
    port,
    services,
    async close(graceMs = 10_000) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const grace = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(grace);
      await forwarder.stop();
    },
  };
}
