/**
 * CORS for browser apps, per app (docs/identity.md): only the routes a page of an app calls (`appRoutes`)
 * ever grant an origin; every other route — health, readiness, metrics, OpenAPI, developer, admin —
 * allows none, whatever token the request carries. On an app route an actual request gets
 * `access-control-allow-origin` only when its `Origin` is one the request's app lists. The app is
 * known from the session (`requireSession`), from the handler (`c.var.appOrigins`, set by
 * `POST /v1/sessions` once it found the app), or else from the bearer session token. A preflight
 * carries neither token nor body, so on an app route it is answered for any origin that some app
 * lists; the actual request is then held to its own app's list. Requests carry bearer tokens, never
 * cookies, so a preflight that lets a request through cannot spend anyone's credentials.
 */
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env.ts';
import type { ServiceName } from '../env.ts';
import { hashSessionToken } from '../auth/require-session.ts';
import { isOriginListedByAnyApp, originsOfSessionToken } from '../cors/origin-lookup.ts';
import { waitUntil } from '../wait-until.ts';

// x-api-key, anthropic-version and anthropic-beta: what the Anthropic SDK sends to /v1/messages from a browser.
const allowHeaders = 'authorization, content-type, x-request-id, x-api-key, anthropic-version, anthropic-beta';
const allowMethods = 'GET, POST, PATCH, PUT, DELETE, OPTIONS';
const exposeHeaders = 'x-request-id, retry-after, x-ratelimit-limit, x-ratelimit-remaining';

/**
 * The routes that concern an app, per worker: the app is named in the body (`/v1/sessions`) or is the
 * session's. `/*` ends a prefix. A route missing here is refused to browsers (fail closed).
 */
const appRoutes: Record<ServiceName, readonly string[]> = {
  api: ['/v1/sessions', '/v1/user/*', '/v1/usage/local'],
  gateway: ['/v1/chat/completions', '/v1/responses', '/v1/messages', '/v1/messages/count_tokens', '/v1/embeddings', '/v1/models'],
  metrics: [],
};

function isAppRoute(service: ServiceName, path: string): boolean {
  return appRoutes[service].some((route) => (route.endsWith('/*') ? path.startsWith(route.slice(0, -1)) : path === route));
}

export function appCors(): MiddlewareHandler<AppEnv> {
  return async function appCorsMiddleware(c, next) {
    const origin = c.req.header('origin');
    const forApp = isAppRoute(c.var.service, c.req.path);
    const defer = (promise: Promise<unknown>) => waitUntil(c, promise);
    if (c.req.method === 'OPTIONS' && origin !== undefined && c.req.header('access-control-request-method')) {
      const headers: Record<string, string> = { vary: 'Origin' };
      if (forApp && (await listedSafely(() => isOriginListedByAnyApp(c.env, defer, origin)))) {
        Object.assign(headers, {
          'access-control-allow-origin': origin,
          'access-control-allow-headers': allowHeaders,
          'access-control-allow-methods': allowMethods,
          'access-control-max-age': '600',
        });
      }
      return c.body(null, 204, headers);
    }
    await next();
    if (origin === undefined || !forApp) return;
    c.header('vary', 'Origin', { append: true });
    const origins =
      c.var.appOrigins ??
      (await listedSafely(() =>
        originsFromToken(c.req.header('authorization'), c.req.header('x-api-key'), (hash) => originsOfSessionToken(c.env, defer, hash)),
      ));
    if (Array.isArray(origins) && origins.includes(origin)) {
      c.header('access-control-allow-origin', origin);
      c.header('access-control-expose-headers', exposeHeaders);
    }
  };
}

/** The origins of the session a request carries: `Authorization: Bearer fvs_…`, or `x-api-key: fvs_…` (the Messages surface). */
async function originsFromToken(
  authorization: string | undefined,
  apiKey: string | undefined,
  lookup: (tokenHash: string) => Promise<readonly string[]>,
): Promise<readonly string[]> {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1] ?? apiKey?.trim();
  const tokenHash = token === undefined ? undefined : await hashSessionToken(token);
  return tokenHash === undefined ? [] : lookup(tokenHash);
}

/** CORS never turns an answer into an error: a failed lookup just leaves the origin unallowed. */
async function listedSafely<T>(lookup: () => Promise<T>): Promise<T | false> {
  try {
    return await lookup();
  } catch {
    return false;
  }
}
