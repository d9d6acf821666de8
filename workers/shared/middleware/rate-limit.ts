import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { intSetting } from '../env.ts';
import { FaucetError } from '../wire/errors.ts';
import { routePattern } from '../route-pattern.ts';

export interface RateLimitOptions {
  /** Names of the env settings holding the limit and the window (DESIGN §7). */
  maxRequestsSetting: 'API_RATE_LIMIT_MAX_REQUESTS' | 'GATEWAY_RATE_LIMIT_MAX_REQUESTS';
  windowMsSetting: 'API_RATE_LIMIT_WINDOW_MS' | 'GATEWAY_RATE_LIMIT_WINDOW_MS';
  defaultMaxRequests: number;
  defaultWindowMs: number;
  /** Paths never limited (liveness probes). */
  exempt?: string[];
}

/** Keys already over their limit in this isolate, until their window ends: no DO call for them. */
const knownLimited = new Map<string, number>();

/**
 * Per client IP and route pattern, counted in a `RateLimiter` Durable Object. `0` disables.
 * Fails open: when the limiter cannot be reached the request is served (and logged), because an
 * outage of an abuse control must not become an outage of paid traffic.
 */
export function rateLimit(options: RateLimitOptions): MiddlewareHandler<AppEnv> {
  return async function rateLimitMiddleware(c, next) {
    const limit = intSetting(c.env[options.maxRequestsSetting], options.defaultMaxRequests);
    const windowMs = intSetting(c.env[options.windowMsSetting], options.defaultWindowMs);
    if (limit === 0 || windowMs === 0 || !c.env.RATE_LIMITER || options.exempt?.includes(c.req.path)) return next();

    const ip = c.req.header('cf-connecting-ip') ?? c.req.header('x-real-ip') ?? 'unknown';
    const key = `${c.get('service')}|${c.req.method}|${routePattern(c)}|${ip}`;
    const now = Date.now();
    const limitedUntil = knownLimited.get(key);
    if (limitedUntil !== undefined && limitedUntil > now) throw limited(limitedUntil - now);

    let decision;
    try {
      const stub = c.env.RATE_LIMITER.get(c.env.RATE_LIMITER.idFromName(key));
      decision = await stub.hit(limit, windowMs);
    } catch (error) {
      c.get('logger').warn('rate limiter unavailable; failing open', { error: (error as Error).name });
      return next();
    }
    if (!decision.allowed) {
      knownLimited.set(key, decision.resetAtMs);
      throw limited(decision.resetAtMs - now);
    }
    knownLimited.delete(key);
    await next();
    c.res.headers.set('x-ratelimit-limit', String(limit));
    c.res.headers.set('x-ratelimit-remaining', String(decision.remaining));
  };
}

function limited(retryAfterMs: number): FaucetError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new FaucetError('rate_limited', `Too many requests; retry in ${seconds}s`, {
    headers: { 'retry-after': String(seconds) },
  });
}
