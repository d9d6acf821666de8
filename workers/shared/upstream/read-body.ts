import { FaucetError } from '../wire/errors.ts';

/** Biggest non-streamed upstream answer the gateway buffers. */
export const maxUpstreamBodyBytes = 8 * 1024 * 1024;

/** Answers whose body outboundFetch (`buffered`) read whole already, within the size limit: bytes in memory, no guard. */
const wholeAnswers = new WeakSet<Response>();

/** Marks an answer built from a body already read whole (outbound-fetch.ts). */
export function markedReadWhole(response: Response): Response {
  wholeAnswers.add(response);
  return response;
}

/**
 * Reads a body through its reader (not `Response.text()`), so the FaucetErrors that the
 * outbound-fetch body guard raises on stalls reach the caller unchanged; an answer outboundFetch
 * read whole already has no guard, and the runtime decodes its bytes.
 */
export async function readBodyText(response: Response, maxBytes = maxUpstreamBodyBytes): Promise<string> {
  if (response.body === null) return '';
  // Bytes already in memory, within the limit: the runtime decodes them in one go (a read loop in
  // JS over them cost a measurable share of a call in workerd).
  if (wholeAnswers.has(response) && Number(response.headers.get('content-length')) <= maxBytes) return response.text();
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (bytes > maxBytes) throw new FaucetError('upstream_error', `The upstream answer exceeded ${maxBytes} bytes.`);
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    reader.cancel().catch(() => undefined);
    throw FaucetError.isInstance(error)
      ? error
      : new FaucetError('upstream_error', 'The upstream answer could not be read.', { cause: error });
  }
  return text + decoder.decode();
}

export async function readBodyJson(response: Response): Promise<unknown> {
  const text = await readBodyText(response);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new FaucetError('upstream_error', 'The upstream answered with something that is not JSON.', { cause: error });
  }
}
