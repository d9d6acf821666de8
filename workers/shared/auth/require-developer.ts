import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { findDeveloperByKey } from '../developers/find-developer-by-key.ts';
import { FaucetError } from '../wire/errors.ts';
import { bearerToken } from './bearer.ts';

/**
 * Developer auth (DESIGN §3): `Authorization: Bearer fdk_…`, a live key matched by its SHA-256.
 * Unknown or revoked → 401; a suspended developer → 403 until the operator unsuspends them.
 */
export function requireDeveloper(): MiddlewareHandler<AppEnv> {
  return async function requireDeveloperMiddleware(c, next) {
    const found = await findDeveloperByKey(c.var.database().db, bearerToken(c));
    if (!found) throw new FaucetError('unauthorized', 'Invalid developer key');
    if (found.suspended) throw new FaucetError('forbidden', 'This developer is suspended');
    c.set('developer', { developerId: found.developerId });
    await next();
  };
}
