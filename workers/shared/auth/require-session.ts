import { and, eq, gt, isNull, sql } from 'drizzle-orm';
import type { MiddlewareHandler } from 'hono';
import { apps, virtualSessions, wallets } from '../../../drizzle/schema.ts';
import type { AppEnv, SessionPrincipal } from '../app-env.ts';
import { sha256Hex } from '../crypto.ts';
import type { Db } from '../db.ts';
import { FaucetError } from '../wire/errors.ts';
import { bearerToken } from './bearer.ts';

/** One query: the unexpired, unrevoked session by token hash, with its app, developer, end user and wallet. */
export async function findLiveSession(db: Db, tokenHash: string): Promise<SessionPrincipal | undefined> {
  const [row] = await db
    .select({
      sessionId: virtualSessions.id,
      appId: virtualSessions.appId,
      publicAppId: apps.publicAppId,
      developerId: apps.developerId,
      endUserId: virtualSessions.endUserId,
      walletId: wallets.id,
      expiresAt: virtualSessions.expiresAt,
      allowedOrigins: apps.allowedOrigins,
    })
    .from(virtualSessions)
    .innerJoin(apps, eq(apps.id, virtualSessions.appId))
    .innerJoin(wallets, eq(wallets.endUserId, virtualSessions.endUserId))
    .where(and(eq(virtualSessions.tokenHash, tokenHash), gt(virtualSessions.expiresAt, sql`now()`), isNull(virtualSessions.revokedAt)));
  return row && { ...row, expiresAt: row.expiresAt.toISOString() };
}

export async function hashSessionToken(token: string): Promise<string | undefined> {
  return token.startsWith('fvs_') && token.length >= 40 && token.length <= 200 ? sha256Hex(token) : undefined;
}

/** End-user auth (DESIGN §3): `Authorization: Bearer fvs_…`; unknown, expired or revoked → 401. */
export function requireSession(): MiddlewareHandler<AppEnv> {
  return async function requireSessionMiddleware(c, next) {
    const tokenHash = await hashSessionToken(bearerToken(c));
    if (!tokenHash) throw new FaucetError('unauthorized', 'Invalid session token');
    const session = await findLiveSession(c.var.database().db, tokenHash);
    if (!session) throw new FaucetError('unauthorized', 'Session is unknown or expired');
    c.set('session', session);
    c.set('appOrigins', session.allowedOrigins);
    await next();
  };
}
