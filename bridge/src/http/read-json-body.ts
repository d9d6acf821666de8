import type { IncomingMessage } from 'node:http';
import { FaucetError } from '../../../workers/shared/wire/errors';

/**
 * Reads a JSON body of at most `limitBytes`. Browsers must send `application/json`, which also
 * forces a CORS preflight, so a page from a foreign origin cannot post here with a "simple" request.
 */
export async function readJsonBody(request: IncomingMessage, limitBytes: number): Promise<unknown> {
  const contentType = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (contentType !== 'application/json') {
    throw new FaucetError('invalid_request', 'Content-Type must be application/json.');
  }
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > limitBytes) throw tooLarge(limitBytes);

  const body = await collect(request, limitBytes);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new FaucetError('invalid_request', 'The request body is not valid JSON.');
  }
}

/** Event-based rather than `for await`: leaving that loop early would destroy the socket before the 413 is sent. */
function collect(request: IncomingMessage, limitBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limitBytes) {
        request.off('data', onData);
        request.pause();
        reject(tooLarge(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    request.on('data', onData);
    request.once('end', () => resolve(Buffer.concat(chunks)));
    request.once('error', () => reject(new FaucetError('invalid_request', 'The request body could not be read.')));
  });
}

function tooLarge(limitBytes: number): FaucetError {
  return new FaucetError('payload_too_large', `The request body is larger than ${limitBytes} bytes.`, {
    headers: { connection: 'close' },
  });
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
