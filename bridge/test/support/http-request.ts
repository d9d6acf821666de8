import { request as httpRequest } from 'node:http';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json<T = any>(): T;
}

/**
 * node:http rather than fetch, so a test controls every header (fetch will not send a forged
 * Host or Origin).
 */
export function rawRequest(
  port: number,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string | object; chunked?: boolean },
): Promise<RawResponse> {
  const body = typeof options.body === 'object' ? JSON.stringify(options.body) : options.body;
  const headers: Record<string, string> = { host: `127.0.0.1:${port}`, ...options.headers };
  if (typeof options.body === 'object' && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) {
    headers['content-type'] = 'application/json';
  }
  // Node's client sends DELETE/OPTIONS bodies without framing unless told the length.
  if (body !== undefined && !options.chunked) headers['content-length'] = String(Buffer.byteLength(body));
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json: () => JSON.parse(text) });
      });
      response.on('error', reject);
    });
    request.on('error', reject);
    if (options.chunked && body !== undefined) {
      request.write(body); // written before end(): sent with Transfer-Encoding: chunked
      request.end();
    } else {
      request.end(body);
    }
  });
}
