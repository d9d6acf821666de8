/**
 * How long a gateway call may live, and so how long its hold must (DESIGN §5: a hold lives as long
 * as its call). The gateway ends every call at its deadline (a stream is cut and billed there); the
 * API's sweeper books a call still open `settleGraceSeconds` after its deadline (its isolate ended
 * before the booking); the hold outlives both, so a booking never finds its call's money gone.
 */
import { intSetting, type Env } from '../env.ts';

export interface CallLimits {
  /** Longest a call may run, upstream included (CALL_MAX_DURATION_SECONDS, default 15 min). */
  maxDurationSeconds: number;
  /** After the deadline, how long the gateway has to book before the sweeper does (CALL_SETTLE_GRACE_SECONDS). */
  settleGraceSeconds: number;
  /** The hold's lifetime: deadline + twice the grace, so it outlives the sweep. */
  holdTtlSeconds: number;
  /**
   * After the client leaves a stream, how long the gateway keeps reading the upstream for its own
   * usage count (UPSTREAM_DRAIN_MS): below the ~30 s Cloudflare gives `waitUntil` work.
   */
  drainMs: number;
}

export function callLimits(env: Env): CallLimits {
  const maxDurationSeconds = Math.max(1, intSetting(env.CALL_MAX_DURATION_SECONDS, 900));
  const settleGraceSeconds = Math.max(1, intSetting(env.CALL_SETTLE_GRACE_SECONDS, 600));
  return {
    maxDurationSeconds,
    settleGraceSeconds,
    holdTtlSeconds: maxDurationSeconds + 2 * settleGraceSeconds,
    drainMs: intSetting(env.UPSTREAM_DRAIN_MS, 20_000),
  };
}
