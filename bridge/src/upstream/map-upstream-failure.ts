import { FaucetError, type ErrorCode } from '../../../workers/shared/wire/errors';
import type { Upstream } from './upstream-kind';

/** Statuses a local server returns for the caller's own mistakes keep their meaning; the rest are upstream errors. */
const codeByStatus: Record<number, ErrorCode> = {
  400: 'invalid_request',
  404: 'not_found',
  413: 'payload_too_large',
  422: 'invalid_request',
};

/** Turns a non-2xx upstream answer into the envelope, quoting the server's own short message (e.g. "model not found"). */
export async function mapUpstreamFailure(upstream: Upstream, answer: Response): Promise<FaucetError> {
  const text = await answer.text().catch(() => '');
  let detail = '';
  try {
    const parsed = JSON.parse(text) as { error?: unknown; message?: unknown };
    const error = parsed.error as { message?: unknown } | string | undefined;
    const message = typeof error === 'string' ? error : typeof error?.message === 'string' ? error.message : parsed.message;
    if (typeof message === 'string') detail = `: ${message.slice(0, 300)}`;
  } catch {
    // Not JSON: the status alone has to do.
  }
  const code = codeByStatus[answer.status] ?? 'upstream_error';
  return new FaucetError(code, `The local model server at ${upstream.url} answered HTTP ${answer.status}${detail}`);
}
