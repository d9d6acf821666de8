import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { createDatabase, type OpenDatabase, type RequestDatabase } from '../db.ts';
import { waitUntil } from '../wait-until.ts';

/**
 * The one lifecycle of a database handle: `c.var.database()` opens the request's pool on first use;
 * it is ended after the response (with `waitUntil`) once every `retain()` has been released.
 */
export function database(open: OpenDatabase = createDatabase): MiddlewareHandler<AppEnv> {
  return async function databaseMiddleware(c, next) {
    let handle: RequestDatabase | undefined;
    let retained = 0;
    let responded = false;
    let markIdle: () => void = () => undefined;
    const idle = new Promise<void>((resolve) => (markIdle = resolve));
    const settle = () => {
      if (responded && retained === 0) markIdle();
    };
    c.set('database', () => {
      if (handle) return handle;
      const opened = open(c.env);
      handle = {
        ...opened,
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
      if (handle) {
        const { pool } = handle;
        waitUntil(
          c,
          idle.then(() => pool.end()).catch(() => {}),
        );
        settle();
      }
    }
  };
}
