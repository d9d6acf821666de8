import { FaucetError } from '../wire/errors.ts';

/** Biggest non-streamed upstream answer the gateway buffers. */
export const maxUpstreamBodyBytes = 8 * 1024 * 1024;

/**
 * Reads a body through its reader (not `Response.text()`), so the FaucetErrors that the
 * outbound-fetch body guard raises on stalls reach the caller unchanged.
 */
export async function readBodyText(response: Response, maxBytes = maxUpstreamBodyBytes): Promise<string> {
  if (response.body === null) return '';
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
