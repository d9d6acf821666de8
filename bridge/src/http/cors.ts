import type { IncomingMessage, ServerResponse } from 'node:http';

const allowedMethods = 'GET, POST, OPTIONS';
const allowedRequestHeaders = new Set(['authorization', 'content-type', 'x-request-id']);

/** Normalises a configured origin; throws on `*`, paths and anything that is not http(s). */
export function parseAllowedOrigin(value: string): string {
  const trimmed = value.trim().replace(/\/$/, '');
  if (trimmed === '*') throw new Error('"*" is not allowed as an origin: list each origin explicitly.');
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw new Error(`"${value}" is not an origin like https://app.example.com`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== trimmed.toLowerCase()) {
    throw new Error(`"${value}" is not an origin like https://app.example.com (scheme, host and port only)`);
  }
  return url.origin;
}

export type OriginVerdict = 'none' | 'allowed' | 'refused';

export function judgeOrigin(request: IncomingMessage, allowedOrigins: ReadonlySet<string>): OriginVerdict {
  const origin = request.headers.origin;
  if (origin === undefined) return 'none';
  return allowedOrigins.has(origin.toLowerCase()) ? 'allowed' : 'refused';
}

/** Headers granting an allowed origin access to an actual (non-preflight) response. */
export function grantOrigin(response: ServerResponse, origin: string): void {
  response.setHeader('access-control-allow-origin', origin);
  response.setHeader('access-control-expose-headers', 'x-request-id');
}

/**
 * Answers a CORS preflight for an allowed origin, including Chrome's Private Network Access
 * preflight (`Access-Control-Request-Private-Network: true`) that a public page sends before it
 * may call a loopback address.
 */
export function answerPreflight(request: IncomingMessage, response: ServerResponse, origin: string): void {
  grantOrigin(response, origin);
  response.setHeader('access-control-allow-methods', allowedMethods);
  const requested = String(request.headers['access-control-request-headers'] ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => allowedRequestHeaders.has(name));
  if (requested.length > 0) response.setHeader('access-control-allow-headers', requested.join(', '));
  if (request.headers['access-control-request-private-network'] === 'true') {
    response.setHeader('access-control-allow-private-network', 'true');
  }
  response.setHeader('access-control-max-age', '600');
  response.writeHead(204);
  response.end();
}
