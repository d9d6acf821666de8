import { FaucetError } from '../wire/errors.ts';

/** Biggest non-streamed upstream answer the gateway buffers. */
export const maxUpstreamBodyBytes = 8 * 1024 * 1024;

/** Answers whose body outboundFetch (`buffered`) read whole already, within the size limit, and its text. */
const wholeAnswers = new WeakMap<Response, string>();

/** An answer of a body already read whole (outbound-fetch.ts): its text is kept for `readBodyText`. */
export function answerReadWhole(text: string, init: ResponseInit): Response {
  const response = new Response(text, init);
  wholeAnswers.set(response, text);
  return response;
}

/**
 * Reads a body through its reader (not `Response.text()`), so the FaucetErrors that the
 * outbound-fetch body guard raises on stalls reach the caller unchanged; an answer outboundFetch
 * read whole already has no guard, and its text is at hand.
 */
export async function readBodyText(response: Response, maxBytes = maxUpstreamBodyBytes): Promise<string> {
  if (response.body === null) return '';
  // Read whole and decoded by the runtime already, within the limit (a read loop in JS over bytes in
  // memory, or reading them again, cost a measurable share of a call in workerd).
  const whole = wholeAnswers.get(response);
  if (whole !== undefined && !response.bodyUsed && Number(response.headers.get('content-length')) <= maxBytes) return whole;
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
