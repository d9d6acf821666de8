import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env.ts';

const safeRequestId = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps a caller's `x-request-id` when it is short and safe, otherwise makes one; echoes it back. */
export function requestId(): MiddlewareHandler<AppEnv> {
  return async function requestIdMiddleware(c, next) {
    const supplied = c.req.header('x-request-id');
    const id = supplied && safeRequestId.test(supplied) ? supplied : `req_${crypto.randomUUID().replace(/-/g, '')}`;
    c.set('requestId', id);
    await next();
    c.res.headers.set('x-request-id', id);
  };
}
