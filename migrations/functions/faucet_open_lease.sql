-- The current definition of faucet_open_lease (migrations/README.md: edit it here; the runner re-applies a changed file).
-- A wallet object's lease, taken in the statement that reads a call's context
-- (docs/edge.md): renewed to p_target by faucet_settle_lease (no calls, keep) only when the call is
-- leasable (p_outcome, faucet_lease_context's answer) and the session's end user is the one the
-- object is named after (end_users.wallet_object). Otherwise nothing is run and no row is returned: a
-- token whose wallet part names another user's object leases nothing. The lease is capped by the
-- app's spend limits, its call slots by its requests-per-minute limit; spend_limits and rate_limit
-- say by how much. p_budgets (a developer key's id and the budget wanted, as faucet_settle_lease
-- takes it) leases part of the key's monthly budget in the same statement (key_budgets).
-- Answers the lease as faucet_settle_lease does (faucet_lease_state), or no row.
create or replace function faucet_open_lease(
  p_end_user_id uuid,
  p_outcome text,
  p_wallet_object text,
  p_target numeric,
  p_ttl_seconds integer,
  p_call_slots integer default null,
  p_budgets jsonb default null
) returns setof faucet_lease_state
language plpgsql as $$
begin
  if p_outcome is distinct from 'leasable' or p_end_user_id is null or p_wallet_object is null
     or not exists (select 1 from end_users u where u.id = p_end_user_id and u.wallet_object = p_wallet_object) then
    return;
  end if;
  return query
    select (s.lease).*
      from faucet_settle_lease(p_end_user_id, 'lease:' || p_wallet_object, '[]'::jsonb, '[]'::jsonb, p_target, true, p_ttl_seconds,
                               p_call_slots, p_budgets) s;
end
$$;
