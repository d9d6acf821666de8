import { FaucetError, errorFromResponse } from '../errors.ts';
import { Deadline, sleep } from './deadline.ts';
import { parseRetryAfter, retryDelay, type RetryOptions } from './retry-policy.ts';

export interface RetryEvent {
  /** 1 for the first retry. */
  attempt: number;
  delayMs: number;
  error: FaucetError;
}

export interface TransportConfig {
  fetch: typeof fetch;
  /** Per attempt, until the answer (for JSON: the whole body) has arrived. */
  timeoutMs: number;
  /** Longest silence allowed between two chunks of a stream. */
  streamIdleTimeoutMs: number;
  retry: RetryOptions;
  onRetry?: (event: RetryEvent) => void;
}

export interface HttpRequest {
  method: 'GET' | 'POST';
  url: string;
  headers?: Record<string, string>;
  /** The Authorization header value, asked for on every attempt. */
  authorization?: () => Promise<string>;
  body?: unknown;
  signal?: AbortSignal;
  /** Default true; requests that are not safe to repeat turn it off. */
  retry?: boolean;
  /** Names the request in error messages, e.g. "Chat request". */
  what: string;
}

export interface OpenResponse {
  response: Response;
  /** Still armed for the body: the caller reads the body under it and disposes it. */
  deadline: Deadline;
}

/** Sends one attempt and resolves on a 2xx answer; anything else becomes a FaucetError. */
async function sendOnce(config: TransportConfig, request: HttpRequest, authorization: string | undefined): Promise<OpenResponse> {
  const deadline = new Deadline(request.signal);
  deadline.arm(config.timeoutMs);
  try {
    const headers: Record<string, string> = { accept: 'application/json', ...request.headers };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    if (authorization !== undefined) headers.authorization = authorization;
    const response = await config.fetch(request.url, {
      method: request.method,
      headers,
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      signal: deadline.signal,
    });
    if (!response.ok) throw await readError(response);
    return { response, deadline };
  } catch (thrown) {
    deadline.dispose();
    throw deadline.toError(thrown, request.what);
  }
}

async function readError(response: Response): Promise<FaucetError> {
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
  return errorFromResponse(response.status, body, response.headers.get('x-request-id') ?? undefined, retryAfterMs);
}

/**
 * Runs `run` and repeats it with backoff while the error is retryable (429, 5xx, no connection).
 * The Authorization value is fetched outside the retried part: getting a session retries on its own.
 */
async function withRetries<T>(
  config: TransportConfig,
  request: HttpRequest,
  run: (authorization: string | undefined) => Promise<T>,
): Promise<T> {
  for (let retry = 0; ; retry++) {
    const authorization = request.authorization ? await request.authorization() : undefined;
    try {
      return await run(authorization);
    } catch (thrown) {
      const error = FaucetError.isInstance(thrown) ? thrown : new FaucetError('network_error', String(thrown), { cause: thrown });
      const delayMs = request.retry === false ? undefined : retryDelay(error, retry, config.retry);
      if (delayMs === undefined) throw error;
      config.onRetry?.({ attempt: retry + 1, delayMs, error });
      await sleep(delayMs, request.signal);
    }
  }
}

/** A JSON request: resolves with the parsed 2xx body. */
export function requestJson<T>(config: TransportConfig, request: HttpRequest): Promise<T> {
  return withRetries(config, request, async (authorization) => {
    const { response, deadline } = await sendOnce(config, request, authorization);
    try {
      const text = await response.text();
      try {
        return JSON.parse(text) as T;
      } catch (cause) {
        throw new FaucetError('invalid_response', `${request.what}: answer is not JSON`, {
          status: response.status,
          requestId: response.headers.get('x-request-id') ?? undefined,
          cause,
        });
      }
    } catch (thrown) {
      throw deadline.toError(thrown, request.what);
    } finally {
      deadline.dispose();
    }
  });
}

/** A streaming request: resolves once a 2xx answer has started; retries only happen before that. */
export function openStream(config: TransportConfig, request: HttpRequest): Promise<OpenResponse> {
  return withRetries(config, request, (authorization) =>
    sendOnce(config, { ...request, headers: { ...request.headers, accept: 'text/event-stream' } }, authorization),
  );
}
