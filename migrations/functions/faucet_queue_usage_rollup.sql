-- The current definition of faucet_queue_usage_rollup (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Trigger of usage_events (statement level, migration 0012): every inserted event joins the list of
-- events the usage rollup has not folded yet. Whatever writes a usage event, the rollup cannot miss it.
create or replace function faucet_queue_usage_rollup() returns trigger
language plpgsql as $$
begin
  insert into usage_rollup_pending (usage_event_id, app_id, created_at)
  select id, app_id, created_at from inserted_usage_events;
  return null;
end
$$;
