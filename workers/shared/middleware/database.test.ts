import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { AppEnv } from '../app-env.ts';
import type { Database, OpenDatabase } from '../db.ts';
import { database } from './database.ts';

/** An `open` that counts the pools it opens and ends, with no database behind them. */
function countingOpen() {
  const counts = { opened: 0, ended: 0 };
  const open: OpenDatabase = () => {
    counts.opened += 1;
    const pool = { end: async () => void (counts.ended += 1) };
    return { pool, db: {} } as unknown as Database;
  };
  return { counts, open };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('database middleware', () => {
  it('opens no pool for a request that retains the handle but runs no statement', async () => {
    const { counts, open } = countingOpen();
    const app = new Hono<AppEnv>().use(database(open));
    app.get('/', (c) => {
      const release = c.var.database().retain();
      release();
      return c.text('ok');
    });
    expect((await app.request('/')).status).toBe(200);
    await tick();
    expect(counts).toEqual({ opened: 0, ended: 0 });
  });

  it('opens the pool on the first read of db and ends it after the response', async () => {
    const { counts, open } = countingOpen();
    const app = new Hono<AppEnv>().use(database(open));
    app.get('/', (c) => {
      const handle = c.var.database();
      void handle.db;
      void handle.db;
      return c.text('ok');
    });
    await app.request('/');
    await tick();
    expect(counts).toEqual({ opened: 1, ended: 1 });
  });

  it('keeps a retained pool opened after the response until it is released, then ends it', async () => {
    const { counts, open } = countingOpen();
    let releaseLater: () => void = () => undefined;
    let openLater: () => void = () => undefined;
    const app = new Hono<AppEnv>().use(database(open));
    app.get('/', (c) => {
      const handle = c.var.database();
      releaseLater = handle.retain();
      openLater = () => void handle.db;
      return c.text('ok');
    });
    await app.request('/');
    await tick();
    // A statement that first needs the pool after the response (work under waitUntil).
    openLater();
    await tick();
    expect(counts).toEqual({ opened: 1, ended: 0 });
    releaseLater();
    await tick();
    expect(counts).toEqual({ opened: 1, ended: 1 });
  });
});
