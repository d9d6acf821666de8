import type { MiddlewareHandler } from 'hono';
import type { AppEnv, SessionPrincipal } from '../app-env.ts';
import { sha256Hex } from '../crypto.ts';
import { FaucetError } from '../wire/errors.ts';
import { bearerToken } from './bearer.ts';

/** One query: the unexpired, unrevoked session by token hash, with its app, developer, end user and wallet. */
export const sessionLookupSql = `
  select s.id as session_id, s.app_id, a.public_app_id, a.developer_id, s.end_user_id, w.id as wallet_id,
         s.expires_at, a.allowed_origins
    from virtual_sessions s
    join apps a on a.id = s.app_id
    join wallets w on w.end_user_id = s.end_user_id
   where s.token_hash = $1 and s.expires_at > now() and s.revoked_at is null`;

export async function hashSessionToken(token: string): Promise<string | undefined> {
  return token.startsWith('fvs_') && token.length >= 40 && token.length <= 200 ? sha256Hex(token) : undefined;
}

/** End-user auth (DESIGN §3): `Authorization: Bearer fvs_…`; unknown, expired or revoked → 401. */
export function requireSession(): MiddlewareHandler<AppEnv> {
  return async function requireSessionMiddleware(c, next) {
    const tokenHash = await hashSessionToken(bearerToken(c));
    if (!tokenHash) throw new FaucetError('unauthorized', 'Invalid session token');
    const { rows } = await c.var.database().pool.query(sessionLookupSql, [tokenHash]);
    const row = rows[0];
    if (!row) throw new FaucetError('unauthorized', 'Session is unknown or expired');
    const session: SessionPrincipal = {
      sessionId: row.session_id,
      appId: row.app_id,
      publicAppId: row.public_app_id,
      developerId: row.developer_id,
      endUserId: row.end_user_id,
      walletId: row.wallet_id,
      expiresAt: new Date(row.expires_at).toISOString(),
      allowedOrigins: row.allowed_origins,
    };
    c.set('session', session);
    c.set('appOrigins', session.allowedOrigins);
    await next();
  };
}
