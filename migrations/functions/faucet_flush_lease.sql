-- The current definition of faucet_flush_lease (migrations/README.md: edit it here; the runner re-applies a changed file).
-- A wallet object's flush (docs/edge.md), one statement: the request log rows of the calls it decided
-- (p_logs: gateway_call_log rows as JSON), then faucet_settle_lease with the rest of the arguments.
-- Written with the bookings or not at all, so a retried flush writes each log row once (`on conflict
-- do nothing`); a row the table would refuse is left out, never failing the bookings beside it.
-- Answers faucet_settle_lease's row, plus the apps of the log rows that export traces (docs/traces.md)
-- and whether the bookings wrote webhook events (set by the triggers they fired; docs/webhooks.md).
-- A function, not a statement the object sends: its statements' plans are kept per connection, where
-- the object's unnamed statement was planned again on every flush.
create or replace function faucet_flush_lease(
  p_end_user_id uuid,
  p_lease_key text,
  p_logs jsonb,
  p_calls jsonb,
  p_bookings jsonb,
  p_target numeric,
  p_keep boolean,
  p_ttl_seconds integer,
  p_call_slots integer,
  p_budgets jsonb,
  out lease faucet_lease_state,
  out results jsonb,
  out traced_apps jsonb,
  out webhook_events boolean
)
language plpgsql
as $$
declare
  v_settled record;
begin
  insert into gateway_call_log
  select r.* from jsonb_populate_recordset(null::gateway_call_log, coalesce(p_logs, '[]'::jsonb)) r
   where r.end_user_id = p_end_user_id
     and r.id is not null and r.app_id is not null and r.feature_key is not null and r.requested_model is not null
     and r.client_request_id is not null and r.created_at is not null and r.stream is not null
     and r.surface in ('chat.completions', 'responses', 'messages', 'embeddings')
     and r.outcome in ('answered', 'cut', 'upstream_error', 'refused')
     and coalesce(r.authorize_ms, 0) >= 0 and coalesce(r.first_byte_ms, 0) >= 0 and coalesce(r.total_ms, 0) >= 0
     and exists (select 1 from apps a where a.id = r.app_id)
     and (r.provider_credential_id is null or exists (select 1 from provider_credentials k where k.id = r.provider_credential_id))
  on conflict (id) do nothing;

  select s.lease, s.results into v_settled
    from faucet_settle_lease(p_end_user_id, p_lease_key, p_calls, p_bookings, p_target, p_keep, p_ttl_seconds,
                             p_call_slots, p_budgets) s;
  lease := v_settled.lease;
  results := v_settled.results;

  select coalesce(jsonb_agg(t.app_id), '[]'::jsonb) into traced_apps
    from app_trace_exports t
   where t.enabled and t.app_id in (select (e ->> 'app_id')::uuid from jsonb_array_elements(coalesce(p_logs, '[]'::jsonb)) e);
  webhook_events := coalesce(current_setting('faucet.webhook_events', true) = 'written', false);
end
$$;
