import { FaucetError } from '../../../workers/shared/wire/errors';
import type { Upstream } from './upstream-kind';

export interface UpstreamFetchOptions {
  method?: 'GET' | 'POST';
  body?: string;
  signal?: AbortSignal;
  /** Time allowed until the response headers arrive. */
  timeoutMs: number;
  apiKey?: string;
}

/**
 * The one place the bridge calls a model server. Failures become coded errors whose message
 * tells a desktop user what to do; the caller's own Authorization header is never passed on.
 */
export async function upstreamFetch(upstream: Upstream, path: string, options: UpstreamFetchOptions): Promise<Response> {
  // The timeout covers the wait for headers only: a long generation must not be cut off mid-stream.
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, options.timeoutMs);
  const forwardAbort = () => controller.abort();
  if (options.signal?.aborted) controller.abort();
  options.signal?.addEventListener('abort', forwardAbort, { once: true });

  const headers: Record<string, string> = { accept: 'application/json, text/event-stream' };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  try {
    return await fetch(`${upstream.url}${path}`, {
      method: options.method ?? 'GET',
      headers,
      body: options.body,
      signal: controller.signal,
    });
  } catch (error) {
    if (timedOut) {
      throw new FaucetError('upstream_timeout', `The local model server at ${upstream.url} did not answer within ${options.timeoutMs} ms.`);
    }
    throw new FaucetError('upstream_error', unreachableMessage(upstream, error), { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

export function unreachableMessage(upstream: Upstream, error: unknown): string {
  return `Could not reach the local model server at ${upstream.url} (${failureReason(error)}). ${startHint(upstream)}`;
}

/** A short, key-free reason such as "connection refused". */
export function failureReason(error: unknown): string {
  const code = findCode(error);
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host name not found';
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'TimeoutError') return 'timed out';
  return code ? code.toLowerCase() : 'network error';
}

function findCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 4; depth++) {
    const candidate = current as { code?: unknown; name?: unknown; cause?: unknown };
    if (typeof candidate.code === 'string') return candidate.code;
    if (candidate.name === 'TimeoutError') return 'TimeoutError';
    current = candidate.cause;
  }
  return undefined;
}

function startHint(upstream: Upstream): string {
  switch (upstream.kind) {
    case 'ollama':
      return 'Is Ollama running? Start it with `ollama serve`, or pass --upstream URL.';
    case 'lmstudio':
      return "Is LM Studio's local server running? Start it in LM Studio's Developer tab, or pass --upstream URL.";
    case 'llamacpp':
      return 'Is llama.cpp running? Start it with `llama-server -m <model.gguf>`, or pass --upstream URL.';
    default:
      return 'Is the model server running at that address? Check --upstream.';
  }
}
