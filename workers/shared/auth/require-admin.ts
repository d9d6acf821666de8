import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { timingSafeEqual } from '../crypto.ts';
import { FaucetError } from '../wire/errors.ts';
import { bearerToken } from './bearer.ts';

/** `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time; no admin token configured = no admin. */
export function requireAdmin(): MiddlewareHandler<AppEnv> {
  return async function requireAdminMiddleware(c, next) {
    const token = bearerToken(c);
    const expected = c.env.ADMIN_TOKEN;
    if (!expected || expected.length < 16 || !timingSafeEqual(token, expected)) {
      throw new FaucetError('unauthorized', 'Invalid admin token');
    }
    await next();
  };
}
