/**
 * The console's typed client of the public control API. Every call goes to `/api/...` on the
 * console's own origin (its Worker forwards it unchanged), with the signed-in credential as a bearer
 * token. A refusal becomes an `ApiError` carrying the API's envelope (DESIGN §4): its message is what
 * the console shows, with the request id so a user can quote it.
 */

/** The error envelope of the API: `{"error":{"code","message","request_id"}}`. */
export interface ErrorEnvelope {
  error: { code: string; message: string; request_id: string };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

function isEnvelope(value: unknown): value is ErrorEnvelope {
  const error = (value as { error?: unknown } | null)?.error as Record<string, unknown> | undefined;
  return typeof error?.code === 'string' && typeof error.message === 'string';
}

export type Query = Record<string, string | number | undefined>;

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  query?: Query;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ApiClient {
  request<T>(path: string, options?: RequestOptions): Promise<T>;
  get<T>(path: string, query?: Query): Promise<T>;
  post<T>(path: string, body?: unknown, headers?: Record<string, string>): Promise<T>;
  patch<T>(path: string, body: unknown): Promise<T>;
  put<T>(path: string, body: unknown): Promise<T>;
  delete<T>(path: string): Promise<T>;
}

/** A client that sends `credential` (a developer key or the admin token) with every call. */
export function createApiClient(credential: string, fetchImpl: typeof fetch = (...args) => fetch(...args)): ApiClient {
  async function request<T>(path: string, options: RequestOptions = {}): Promise<T> {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(options.query ?? {})) if (value !== undefined) search.set(name, String(value));
    const url = `/api${path}${search.size ? `?${search}` : ''}`;
    const headers: Record<string, string> = { authorization: `Bearer ${credential}`, accept: 'application/json', ...options.headers };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method: options.method ?? 'GET',
        headers,
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      });
    } catch {
      throw new ApiError(0, 'network_error', 'The control API could not be reached.', '');
    }
    const text = await response.text();
    let payload: unknown = null;
    if (text) {
      try {
        payload = JSON.parse(text);
      } catch {
        payload = null;
      }
    }
    if (!response.ok) {
      if (isEnvelope(payload))
        throw new ApiError(response.status, payload.error.code, payload.error.message, payload.error.request_id ?? '');
      throw new ApiError(
        response.status,
        'unexpected_response',
        `The API answered ${response.status}.`,
        response.headers.get('x-request-id') ?? '',
      );
    }
    return payload as T;
  }
  return {
    request,
    get: (path, query) => request(path, { ...(query ? { query } : {}) }),
    post: (path, body, headers) => request(path, { method: 'POST', body: body ?? {}, ...(headers ? { headers } : {}) }),
    patch: (path, body) => request(path, { method: 'PATCH', body }),
    put: (path, body) => request(path, { method: 'PUT', body }),
    delete: (path) => request(path, { method: 'DELETE' }),
  };
}

/** One line for a failed call: the API's message and, when there is one, its request id. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.requestId ? `${error.message} (request ${error.requestId})` : error.message;
  return error instanceof Error ? error.message : 'Something went wrong.';
}
