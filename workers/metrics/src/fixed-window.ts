/** Fixed-window request counting: the pure core of the rate limiter, clock passed in. */
import type { WindowDecision } from '#shared/durable-objects.ts';

export type { WindowDecision };

export class FixedWindowCounter {
  private windowStart = 0;
  private count = 0;

  hit(nowMs: number, limit: number, windowMs: number): WindowDecision {
    const windowStart = nowMs - (nowMs % windowMs);
    if (windowStart !== this.windowStart) {
      this.windowStart = windowStart;
      this.count = 0;
    }
    const resetAtMs = windowStart + windowMs;
    if (this.count >= limit) return { allowed: false, remaining: 0, resetAtMs };
    this.count += 1;
    return { allowed: true, remaining: limit - this.count, resetAtMs };
  }
}
