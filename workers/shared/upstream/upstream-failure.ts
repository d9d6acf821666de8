import { FaucetError } from '../wire/errors.ts';
import { readBodyText } from './read-body.ts';

const maxErrorBodyBytes = 16 * 1024;
const maxMessageLength = 300;

/**
 * Turns an upstream's non-2xx answer into the gateway's error. The caller's own mistakes (400, 404,
 * 413, 422) come back as `invalid_request` with the upstream's explanation; rate limits as
 * `rate_limited` with its retry-after; stalls as `upstream_timeout`; everything else — including
 * the upstream refusing the platform's own key (401/403) — as `upstream_error`, without details.
 */
export async function failureFromResponse(response: Response, providerLabel: string): Promise<FaucetError> {
  const status = response.status;
  const detail = await upstreamMessage(response);
  if (status === 400 || status === 404 || status === 413 || status === 422) {
    return new FaucetError('invalid_request', `${providerLabel} rejected the request (HTTP ${status})${detail ? `: ${detail}` : '.'}`, {
      upstreamStatus: status,
    });
  }
  if (status === 429) {
    const retryAfter = response.headers.get('retry-after');
    return new FaucetError('rate_limited', `${providerLabel} is rate limiting this call; retry later.`, {
      headers: retryAfter !== null && /^\d{1,6}$/.test(retryAfter) ? { 'retry-after': retryAfter } : {},
      upstreamStatus: status,
    });
  }
  if (status === 408 || status === 504 || status === 524) {
    return new FaucetError('upstream_timeout', `${providerLabel} timed out (HTTP ${status}).`, { upstreamStatus: status });
  }
  return new FaucetError('upstream_error', `${providerLabel} failed (HTTP ${status}).`, { upstreamStatus: status });
}

async function upstreamMessage(response: Response): Promise<string> {
  let text: string;
  try {
    text = await readBodyText(response, maxErrorBodyBytes);
  } catch {
    return '';
  }
  let message: unknown;
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    message = typeof body.error === 'string' ? body.error : (body.error?.message ?? body.message);
  } catch {
    return '';
  }
  if (typeof message !== 'string') return '';
  return redactSecrets(message).slice(0, maxMessageLength);
}

/** Provider error messages sometimes quote part of a key; nothing key-shaped goes back out. */
export function redactSecrets(text: string): string {
  return text.replace(/\b(sk|pk|rk|fdk|fvs|key)[-_][A-Za-z0-9_\-*.]{6,}/gi, '[redacted]').replace(/[A-Za-z0-9_-]{32,}/g, '[redacted]');
}
