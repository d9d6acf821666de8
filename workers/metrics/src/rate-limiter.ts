import { DurableObject } from 'cloudflare:workers';
import { FixedWindowCounter, type WindowDecision } from './fixed-window.ts';
import type { RateLimiterObject } from '#shared/durable-objects.ts';

/**
 * One object per limited key (service, route pattern, client IP): a fixed-window counter held in
 * memory. Losing it on eviction only forgives part of a window, which is acceptable for abuse limits.
 */
export class RateLimiter extends DurableObject implements RateLimiterObject {
  private readonly counter = new FixedWindowCounter();

  async hit(limit: number, windowMs: number): Promise<WindowDecision> {
    return this.counter.hit(Date.now(), limit, windowMs);
  }
}
