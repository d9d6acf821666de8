import type { ServerResponse } from 'node:http';
import { errorEnvelope, FaucetError, type ErrorCode, errorStatus } from '../../../workers/shared/wire/errors';

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  response.end(text);
}

export function sendError(
  response: ServerResponse,
  code: ErrorCode,
  message: string,
  requestId: string,
  headers: Record<string, string> = {},
): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  sendJson(response, errorStatus[code], errorEnvelope(code, message, requestId), headers);
}

/** Renders any thrown value as the envelope; unexpected errors never show their message. */
export function sendThrown(response: ServerResponse, thrown: unknown, requestId: string): ErrorCode {
  if (FaucetError.isInstance(thrown)) {
    sendError(response, thrown.code, thrown.message, requestId, thrown.headers);
    return thrown.code;
  }
  sendError(response, 'internal_error', 'The bridge failed unexpectedly; see its log for the request ID.', requestId);
  return 'internal_error';
}
