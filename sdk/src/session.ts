import { FaucetError } from './errors.ts';
import { throwIfAborted } from './http/deadline.ts';
import { requestJson, type TransportConfig } from './http/transport.ts';
import type { Session } from './types.ts';

/**
 * Where sessions come from (docs/identity.md): the developer's backend (`session`: its
 * `POST /v1/sessions` answer, or just the token), a user token the developer signed (`userToken`,
 * exchanged here), a random device id kept on the device (`anonymous` apps), or the user id alone
 * (refused by `server` and `signed` apps).
 */
export type SessionSource =
  | { kind: 'backend'; session: () => Promise<string | Session> }
  | { kind: 'user-token'; userToken: () => Promise<string> }
  | { kind: 'device'; deviceId: () => string }
  | { kind: 'user-id'; userId: string };

export interface SessionConfig {
  transport: TransportConfig;
  baseUrl: string;
  publicAppId: string;
  source: SessionSource;
  now: () => number;
}

interface CachedSession {
  session: Session;
  expiresAt: number;
  /** Refresh from this moment on, a little before the token expires. */
  refreshAt: number;
}

/** At most this long, and at most a fifth of the token's lifetime, before expiry the token is renewed. */
const maxRefreshMarginMs = 60_000;

/**
 * Holds the end user's session token: created on first use, shared by concurrent calls, renewed
 * shortly before it expires, and dropped when the server says it is no longer valid (401).
 */
export class SessionManager {
  private cached: CachedSession | undefined;
  private creating: Promise<CachedSession> | undefined;

  constructor(private readonly config: SessionConfig) {}

  /** Always asks the server for a new session and caches it. */
  async create(signal?: AbortSignal): Promise<Session> {
    return (await this.start(signal, true)).session;
  }

  /** A token that is not about to expire, creating a session when needed. */
  async token(signal?: AbortSignal): Promise<string> {
    throwIfAborted(signal, 'Session request');
    const cached = this.cached;
    if (cached && this.config.now() < cached.refreshAt) return cached.session.session_token;
    return (await this.start(signal, false)).session.session_token;
  }

  /**
   * The end user's opaque reference for local usage reports: the session's `user_ref`, which the
   * server checks. Undefined for a bare token from the backend: only the answer carries it.
   */
  async userRef(signal?: AbortSignal): Promise<string | undefined> {
    await this.token(signal);
    return this.cached?.session.user_ref;
  }

  /** Forgets `token` if it is still the cached one (the server refused it). */
  invalidate(token: string): void {
    if (this.cached?.session.session_token === token) this.cached = undefined;
  }

  /**
   * Runs `call`, which asks `authorization()` for the header value on every attempt (so a retry
   * after a long wait picks up a renewed token); on 401 the token is dropped and `call` runs once more.
   */
  async withToken<T>(call: (authorization: () => Promise<string>) => Promise<T>, signal?: AbortSignal): Promise<T> {
    let used: string | undefined;
    const authorization = async () => {
      used = await this.token(signal);
      return `Bearer ${used}`;
    };
    try {
      return await call(authorization);
    } catch (thrown) {
      if (!FaucetError.isInstance(thrown) || thrown.status !== 401 || used === undefined) throw thrown;
      this.invalidate(used);
      return call(authorization);
    }
  }

  private start(signal: AbortSignal | undefined, force: boolean): Promise<CachedSession> {
    if (force || !this.creating) {
      const creating = this.fetchSession().finally(() => {
        if (this.creating === creating) this.creating = undefined;
      });
      // Every caller may have given up (aborted) before it settles; its failure then concerns no one.
      creating.catch(() => undefined);
      this.creating = creating;
    }
    // The shared request runs without the caller's signal, so one caller's abort spares the others.
    return raceAbort(this.creating!, signal);
  }

  private async fetchSession(): Promise<CachedSession> {
    const { session, expiresAt } = await this.obtainSession();
    const receivedAt = this.config.now();
    const margin = Math.min(maxRefreshMarginMs, Math.max(0, expiresAt - receivedAt) / 5);
    this.cached = { session, expiresAt, refreshAt: expiresAt - margin };
    return this.cached;
  }

  private async obtainSession(): Promise<{ session: Session; expiresAt: number }> {
    const { transport, baseUrl, publicAppId, source } = this.config;
    let session: Session;
    if (source.kind === 'backend') {
      const given = await source.session();
      // A bare token of unknown lifetime is kept until the server refuses it (401), then obtained again.
      if (typeof given === 'string' && given !== '') {
        return { session: { session_token: given, token_type: 'Bearer', expires_at: '' }, expiresAt: Number.POSITIVE_INFINITY };
      }
      session = given as Session;
    } else {
      const body =
        source.kind === 'user-token'
          ? { public_app_id: publicAppId, user_token: await source.userToken() }
          : source.kind === 'device'
            ? { public_app_id: publicAppId, device_id: source.deviceId() }
            : { public_app_id: publicAppId, external_user_id: source.userId };
      session = await requestJson<Session>(transport, { method: 'POST', url: `${baseUrl}/v1/sessions`, body, what: 'Session request' });
    }
    const expiresAt = Date.parse(session?.expires_at);
    if (typeof session?.session_token !== 'string' || Number.isNaN(expiresAt)) {
      throw new FaucetError('invalid_response', 'Session answer lacks session_token or expires_at');
    }
    return { session, expiresAt };
  }
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new FaucetError('aborted', 'Session request was aborted', { cause: signal.reason }));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new FaucetError('aborted', 'Session request was aborted', { cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
