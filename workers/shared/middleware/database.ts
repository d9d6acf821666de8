import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { createDatabase, type Database } from '../db.ts';
import { waitUntil } from '../wait-until.ts';

/**
 * Gives handlers `c.var.database()`, which opens the request's pool on first use. The pool is ended
 * after the response with `waitUntil`. A streaming handler that still needs the database once its
 * response has been returned must open its own handle with `createDatabase` and end it itself.
 */
export function database(): MiddlewareHandler<AppEnv> {
  return async function databaseMiddleware(c, next) {
    let handle: Database | undefined;
    c.set('database', () => (handle ??= createDatabase(c.env)));
    try {
      await next();
    } finally {
      if (handle) waitUntil(c, handle.pool.end().catch(() => {}));
    }
  };
}
