import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { sha256Hex } from '../crypto.ts';
import { FaucetError } from '../wire/errors.ts';
import { bearerToken } from './bearer.ts';

/** Developer auth (DESIGN §3): `Authorization: Bearer fdk_…`, matched by the key's SHA-256. */
export function requireDeveloper(): MiddlewareHandler<AppEnv> {
  return async function requireDeveloperMiddleware(c, next) {
    const token = bearerToken(c);
    if (!token.startsWith('fdk_') || token.length > 200) throw new FaucetError('unauthorized', 'Invalid developer key');
    const { rows } = await c.var.database().pool.query('select id from developers where api_key_hash = $1', [await sha256Hex(token)]);
    if (!rows[0]) throw new FaucetError('unauthorized', 'Invalid developer key');
    c.set('developer', { developerId: rows[0].id });
    await next();
  };
}
