-- The current definition of faucet_month_start (migrations/README.md: edit it here; the runner re-applies a changed file).
-- The calendar month (UTC) that `p_at` falls in starts at this instant.
create or replace function faucet_month_start(p_at timestamptz) returns timestamptz
language sql immutable as $$
  select date_trunc('month', p_at at time zone 'UTC') at time zone 'UTC'
$$;
