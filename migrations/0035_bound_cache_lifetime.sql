-- A call never settled is booked at its bound (workers/shared/calls/rate-at-bound.ts): its input at the
-- price its hold was sized at. A prompt with cache breakpoints is held with all its input at the
-- cache-write price of the breakpoints' longest lifetime (hold-bounds.ts, `heldInput`), since the
-- provider may write all of it; the call record now keeps that lifetime, so a call swept by the
-- wallet object or by the stale-call sweeper is booked at the same price, never at the plain input
-- price below what the provider may have charged. Null: no breakpoint (and every call before this).
-- Idempotent: `if not exists`, a constraint added once.

alter table gateway_calls add column if not exists bound_cache_lifetime text;

do $$ begin
  alter table gateway_calls add constraint gateway_calls_bound_cache_lifetime check (bound_cache_lifetime in ('5m', '1h'));
exception when duplicate_object then null;
end $$;
