/**
 * The console's Worker: static assets (the built single-page app, served by the platform before this
 * code runs) and a transparent pass-through of `/api/*` to the public control API. Its one endpoint
 * of its own is `GET /health` (the console's version on the release line); it keeps nothing: the
 * request goes on with its method, headers and body, and the API's answer (error envelopes
 * included) comes back unchanged.
 */
import { workerVersions } from '#shared/release.ts';

interface ConsoleEnv {
  /** Origin of the control API, e.g. `https://faucet-api.example.workers.dev`. */
  API_ORIGIN: string;
  ASSETS: { fetch(request: Request): Promise<Response> };
}

/** The control API URL for a console URL under `/api/`, or null for any other path. */
export function apiTarget(url: URL, apiOrigin: string): URL | null {
  if (url.pathname !== '/api' && !url.pathname.startsWith('/api/')) return null;
  const target = new URL(apiOrigin);
  target.pathname = url.pathname.slice('/api'.length) || '/';
  target.search = url.search;
  return target;
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === '/health') return Response.json({ status: 'ok', service: 'console', version: workerVersions.console });
    const target = apiTarget(url, env.API_ORIGIN);
    if (!target) return env.ASSETS.fetch(request);
    const headers = new Headers(request.headers);
    // The API sees the console's own call, not the browser's cookies or origin checks.
    headers.delete('cookie');
    headers.delete('origin');
    try {
      const answer = await fetch(target, {
        method: request.method,
        headers,
        body: request.method === 'GET' || request.method === 'HEAD' ? null : request.body,
        redirect: 'manual',
      });
      // fetch() hands over the body decoded; sending it on under the API's Content-Encoding would
      // re-encode it for a caller that may not have asked for that encoding (the edge compresses anew).
      const answerHeaders = new Headers(answer.headers);
      answerHeaders.delete('content-encoding');
      answerHeaders.delete('content-length');
      return new Response(answer.body, { status: answer.status, statusText: answer.statusText, headers: answerHeaders });
    } catch {
      // The API is down or unreachable: the same envelope the API's own errors use (DESIGN §4).
      const given = request.headers.get('x-request-id') ?? '';
      const requestId = /^[\w.:-]{1,64}$/.test(given) ? given : crypto.randomUUID();
      return Response.json(
        { error: { code: 'upstream_error', message: 'The control API could not be reached', request_id: requestId } },
        { status: 502, headers: { 'x-request-id': requestId } },
      );
    }
  },
} satisfies ExportedHandler<ConsoleEnv>;
