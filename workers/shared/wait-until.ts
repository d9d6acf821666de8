import type { Context } from 'hono';

/**
 * Keeps `work` running after the response (`ctx.waitUntil`). Without an execution context — an app
 * called directly in a unit test — the promise simply runs on its own.
 */
export function waitUntil(c: Context, work: Promise<unknown>): void {
  try {
    c.executionCtx.waitUntil(work);
  } catch {
    // No execution context: nothing to extend.
  }
}
