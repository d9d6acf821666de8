import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { createDatabase, type Database, type OpenDatabase, type RequestDatabase } from '../db.ts';
import { waitUntil } from '../wait-until.ts';

/**
 * The one lifecycle of a database handle: `c.var.database()` gives the request's handle, whose pool
 * (and Drizzle over it) is opened on the first read of `db` or `pool`, so a request that only retains
 * the handle in case it needs a statement (a leased gateway call needs none) pays nothing for it. The
 * pool, once opened (before or after the response), is ended with `waitUntil` when the response is out
 * and every `retain()` is released.
 */
export function database(open: OpenDatabase = createDatabase): MiddlewareHandler<AppEnv> {
  return async function databaseMiddleware(c, next) {
    let handle: RequestDatabase | undefined;
    let opened: Database | undefined;
    let retained = 0;
    let responded = false;
    let markIdle: () => void = () => undefined;
    const idle = new Promise<void>((resolve) => (markIdle = resolve));
    const settle = () => {
      if (responded && retained === 0) markIdle();
    };
    const connection = () => {
      if (opened === undefined) {
        opened = open(c.env);
        const { pool } = opened;
        // Ended once the response is out and every retain released; a request that opens none schedules nothing.
        waitUntil(
          c,
          idle.then(() => pool.end()).catch(() => {}),
        );
      }
      return opened;
    };
    c.set('database', () => {
      handle ??= {
        get pool() {
          return connection().pool;
        },
        get db() {
          return connection().db;
        },
        retain() {
          retained += 1;
          let released = false;
          return () => {
            if (released) return;
            released = true;
            retained -= 1;
            settle();
          };
        },
      };
      return handle;
    });
    try {
      await next();
    } finally {
      responded = true;
      settle();
    }
  };
}
