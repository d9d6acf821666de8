import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BridgeServices, RouteHandler } from './context';
import { answerPreflight, grantOrigin, judgeOrigin } from './http/cors';
import { isAllowedHost } from './http/host-guard';
import { requestIdFrom } from './http/request-id';
import { sendError, sendThrown } from './http/send';
import { chatCompletions } from './routes/chat-completions';
import { diagnostics } from './routes/diagnostics';
import { health } from './routes/health';
import { models } from './routes/models';
import { usageReport } from './routes/usage-report';

const routes: Record<string, RouteHandler> = {
  'GET /health': health,
  'GET /diagnostics': diagnostics,
  'GET /models': models,
  'GET /v1/models': models,
  'POST /v1/chat/completions': chatCompletions,
  'POST /usage/report': usageReport,
};

/**
 * Every request, in order: request ID and access log, Host allowlist, Origin allowlist (CORS and
 * preflights), then the route. Guards run before any route, so a refused request does nothing.
 */
export async function handleRequest(
  request: IncomingMessage,
  response: ServerResponse,
  services: BridgeServices,
  allowedHosts: Set<string>,
  allowedOrigins: Set<string>,
): Promise<void> {
  const started = performance.now();
  const requestId = requestIdFrom(request.headers['x-request-id']);
  const path = (request.url ?? '/').split('?')[0]!;
  const key = `${request.method} ${path}`;
  const route = routes[key] ? path : request.method === 'OPTIONS' ? 'preflight' : 'unmatched';
  response.setHeader('x-request-id', requestId);
  response.setHeader('vary', 'Origin');
  response.once('finish', () =>
    services.log.info('request', {
      request_id: requestId,
      method: request.method,
      route,
      status: response.statusCode,
      duration_ms: Math.round(performance.now() - started),
    }),
  );

  if (!isAllowedHost(request.headers.host, allowedHosts)) {
    sendError(response, 'forbidden', 'This Host header is not allowed; call the bridge as 127.0.0.1, localhost or [::1].', requestId);
    return;
  }
  const origin = judgeOrigin(request, allowedOrigins);
  if (origin === 'refused') {
    sendError(
      response,
      'forbidden',
      'This Origin is not allowed; start the bridge with --allow-origin <origin> to let that page call it.',
      requestId,
    );
    return;
  }
  if (origin === 'allowed') grantOrigin(response, request.headers.origin!.toLowerCase());
  if (request.method === 'OPTIONS') {
    if (origin === 'allowed') answerPreflight(request, response, request.headers.origin!.toLowerCase());
    else {
      response.writeHead(204, { allow: 'GET, POST, OPTIONS' });
      response.end();
    }
    return;
  }
  const handler = routes[key];
  if (!handler) {
    sendError(
      response,
      'not_found',
      'No such endpoint. The bridge serves GET /health, GET /diagnostics, GET /models, POST /v1/chat/completions and POST /usage/report.',
      requestId,
    );
    return;
  }
  try {
    await handler({ request, response, requestId, services });
  } catch (error) {
    const code = sendThrown(response, error, requestId);
    if (code === 'internal_error')
      services.log.error('unexpected failure', { request_id: requestId, route, error: (error as Error)?.name ?? 'unknown' });
  }
}
