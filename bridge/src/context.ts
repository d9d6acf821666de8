import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from './log';
import type { Forwarder } from './outbox/forwarder';
import type { OutboxStore } from './outbox/outbox-store';
import type { UpstreamResolver } from './upstream/upstream-resolver';

/** What every route handler gets: the exchange, its request ID and the bridge's services. */
export interface RouteContext {
  request: IncomingMessage;
  response: ServerResponse;
  requestId: string;
  services: BridgeServices;
}

export interface BridgeServices {
  log: Logger;
  upstream: UpstreamResolver;
  upstreamApiKey: string | undefined;
  upstreamTimeoutMs: number;
  outbox: OutboxStore;
  forwarder: Forwarder;
  apiBaseUrl: string | undefined;
  limits: { chatBodyBytes: number; reportBodyBytes: number };
  /** Filled in once the server listens. */
  bound: { host: string; port: number; loopback: boolean };
}

export type RouteHandler = (context: RouteContext) => Promise<void>;
