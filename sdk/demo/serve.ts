/**
 * The demo page: bundles `demo-app.tsx` with esbuild in memory and serves it on loopback, with
 * `/api/*` and `/gateway/*` proxied to the control API and the gateway so the page needs no CORS.
 * It also plays the app's backend (docs/identity.md): `POST /demo-session` mints the page's session
 * with the developer key, which never reaches the browser; for a `signed` app, `POST /demo-user-token`
 * signs the page a short-lived user token with the app's signing secret instead.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { build } from 'esbuild';
import { SignJWT } from 'jose';

export interface DemoServerOptions {
  port: number;
  apiBaseUrl: string;
  gatewayBaseUrl: string;
  publicAppId: string;
  /** The app developer's `fdk_` key, used only by this server to mint sessions (the demo app's policy is `server`). */
  developerKey?: string;
  /**
   * For an app whose policy is `signed`: its `fss_…` signing secret. The page then asks this server
   * for a user token (HS256, 5 minutes) and exchanges it itself, instead of getting a minted session.
   */
  signingSecret?: string;
  host?: string;
  /** The end user the page acts as; the seed gives `demo-user` a 10 USD wallet. */
  userId?: string;
  featureKey?: string;
  model?: string;
  /** The local bridge the page offers for the `local` route (default `http://127.0.0.1:17480`); start it with `--allow-origin <this page's origin>`. */
  bridgeUrl?: string;
}

export interface DemoServer {
  url: string;
  close(): Promise<void>;
}

export async function buildDemoBundle(): Promise<string> {
  const result = await build({
    entryPoints: [join(import.meta.dirname, 'demo-app.tsx')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    jsx: 'automatic',
    // `@faucet/sdk` from its sources (the package's `faucet-source` condition), not from sdk/dist.
    conditions: ['faucet-source'],
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

function escapeJsonForHtml(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

function demoHtml(config: Record<string, string>): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Faucet demo</title>
<script type="application/json" id="faucet-demo-config">${escapeJsonForHtml(config)}</script>
<script type="module" src="/demo.js"></script>
</head>
<body><div id="root"></div></body>
</html>`;
}

const forwardedRequestHeaders = ['authorization', 'content-type', 'accept', 'x-request-id'];
const forwardedResponseHeaders = ['content-type', 'x-request-id', 'retry-after', 'cache-control'];

async function readBody(incoming: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Passes one request through, streaming the answer (SSE included); a client that leaves aborts it. */
async function proxy(incoming: IncomingMessage, response: ServerResponse, target: string): Promise<void> {
  const upstreamAbort = new AbortController();
  response.on('close', () => upstreamAbort.abort());
  const headers: Record<string, string> = {};
  for (const name of forwardedRequestHeaders) {
    const value = incoming.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const method = incoming.method ?? 'GET';
  const body = method === 'GET' || method === 'HEAD' ? undefined : new Uint8Array(await readBody(incoming));
  let upstream: Response;
  try {
    upstream = await fetch(target, { method, headers, body, signal: upstreamAbort.signal });
  } catch {
    const requestId = headers['x-request-id'] ?? 'demo_proxy';
    response.writeHead(502, { 'content-type': 'application/json', 'x-request-id': requestId });
    response.end(JSON.stringify({ error: { code: 'upstream_error', message: 'The local stack did not answer', request_id: requestId } }));
    return;
  }
  const outgoing: Record<string, string> = {};
  for (const name of forwardedResponseHeaders) {
    const value = upstream.headers.get(name);
    if (value !== null) outgoing[name] = value;
  }
  response.writeHead(upstream.status, outgoing);
  try {
    const reader = upstream.body?.getReader();
    for (let chunk = await reader?.read(); chunk && !chunk.done; chunk = await reader!.read()) response.write(chunk.value);
  } catch {
    // The client left or the upstream broke off mid-stream; nothing more to send.
  }
  response.end();
}

/** What a developer's backend does for its signed-in user: ask Faucet for a session with the developer key. */
async function mintSession(response: ServerResponse, apiBaseUrl: string, developerKey: string, options: DemoServerOptions): Promise<void> {
  try {
    const answer = await fetch(`${apiBaseUrl}/v1/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${developerKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ public_app_id: options.publicAppId, external_user_id: options.userId ?? 'demo-user' }),
    });
    response.writeHead(answer.status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(await answer.text());
  } catch {
    response
      .writeHead(502, { 'content-type': 'application/json' })
      .end('{"error":{"code":"upstream_error","message":"The control API could not be reached","request_id":""}}');
  }
}

/** What the backend of a `signed` app does instead: sign its user a short token (docs/identity.md). */
async function signUserToken(response: ServerResponse, signingSecret: string, options: DemoServerOptions): Promise<void> {
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(options.userId ?? 'demo-user')
    .setAudience(options.publicAppId)
    .setIssuedAt()
    .setNotBefore('0s')
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(signingSecret));
  response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify({ token }));
}

export async function startDemoServer(options: DemoServerOptions): Promise<DemoServer> {
  const { developerKey, signingSecret } = options;
  if (!developerKey && !signingSecret) throw new Error('The demo server needs the developer key or, for a signed app, its signing secret');
  const bundle = await buildDemoBundle();
  const html = demoHtml({
    publicAppId: options.publicAppId,
    userId: options.userId ?? 'demo-user',
    featureKey: options.featureKey ?? 'chat',
    model: options.model ?? 'mock:echo',
    bridgeUrl: options.bridgeUrl ?? 'http://127.0.0.1:17480',
    identity: signingSecret ? 'signed' : 'server',
  });
  const apiBaseUrl = options.apiBaseUrl.replace(/\/+$/, '');
  const gatewayBaseUrl = options.gatewayBaseUrl.replace(/\/+$/, '');

  const server = createServer((incoming, response) => {
    const path = incoming.url ?? '/';
    if (path.startsWith('/api/')) return void proxy(incoming, response, apiBaseUrl + path.slice(4));
    if (path.startsWith('/gateway/')) return void proxy(incoming, response, gatewayBaseUrl + path.slice(8));
    if (path === '/demo-session' && incoming.method === 'POST' && developerKey)
      return void mintSession(response, apiBaseUrl, developerKey, options);
    if (path === '/demo-user-token' && incoming.method === 'POST' && signingSecret)
      return void signUserToken(response, signingSecret, options);
    if (incoming.method !== 'GET') return void response.writeHead(405).end();
    // The page itself may carry a query (Stripe's return adds `?checkout=success`).
    const pagePath = path.split('?')[0];
    if (pagePath === '/' || pagePath === '/index.html') {
      return void response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(html);
    }
    if (path === '/demo.js') {
      return void response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-store' }).end(bundle);
    }
    response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
