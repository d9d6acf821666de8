-- The current definition of faucet_abandon_call (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Abandon a call that was never billed: release its hold and its budget reservation and give its
-- client request id back (a same-id retry is then served). A no-op for a call already booked.
create or replace function faucet_abandon_call(p_money_key text) returns boolean
language plpgsql as $$
begin
  if exists (select 1 from usage_events u where u.request_id = p_money_key) then
    return false;
  end if;
  update balance_holds set status = 'released', closed_at = now() where request_id = p_money_key and status = 'active';
  delete from provider_credential_reservations where request_id = p_money_key;
  update gateway_calls set status = 'abandoned', closed_at = now() where money_key = p_money_key and status = 'in_flight';
  return true;
end
$$;
