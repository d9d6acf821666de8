import { describe, expect, it } from 'vitest';
import { FixedWindowCounter } from './fixed-window.ts';

describe('FixedWindowCounter', () => {
  it('allows `limit` hits per window, then refuses until the window ends', () => {
    const counter = new FixedWindowCounter();
    expect(counter.hit(10_000, 2, 1_000)).toEqual({ allowed: true, remaining: 1, resetAtMs: 11_000 });
    expect(counter.hit(10_500, 2, 1_000).allowed).toBe(true);
    expect(counter.hit(10_999, 2, 1_000)).toEqual({ allowed: false, remaining: 0, resetAtMs: 11_000 });
    expect(counter.hit(11_000, 2, 1_000)).toEqual({ allowed: true, remaining: 1, resetAtMs: 12_000 });
  });
});
