-- The current definition of faucet_reserve_credential_budget (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Reserve `p_amount` of a developer key's monthly budget for one call. Every reservation counts: the
-- calls' own and the wallet objects' budget leases (until they expire). One statement for the
-- caller; inside, the key's row is locked first, so concurrent reservations of the same key run
-- one after another, and each sees every reservation and usage event committed before it.
-- outcome: 'reserved' | 'budget_exceeded' | 'duplicate' (this request id holds a reservation) |
-- 'inactive' (no active developer key with this id).
create or replace function faucet_reserve_credential_budget(p_credential_id uuid, p_request_id text, p_amount numeric)
returns text
language plpgsql as $$
declare
  v_budget numeric;
  v_committed numeric;
  v_month_start timestamptz := faucet_month_start(now());
begin
  if p_amount is null or p_amount < 0 then
    raise exception 'reservation amount must not be negative' using errcode = '22023';
  end if;
  select monthly_budget_usd into v_budget from provider_credentials
   where id = p_credential_id and owner_type = 'developer' and status = 'active'
   for no key update;
  if not found then
    return 'inactive';
  end if;

  -- Housekeeping under the lock: settled reservations (their usage event exists), those of an earlier
  -- month and the expired budget leases of wallet objects (faucet_settle_lease) no longer count.
  delete from provider_credential_reservations r
   where r.credential_id = p_credential_id
     and (r.created_at < v_month_start or r.expires_at <= now()
          or exists (select 1 from usage_events u where u.request_id = r.request_id));

  if exists (select 1 from provider_credential_reservations r where r.request_id = p_request_id) then
    return 'duplicate';
  end if;

  -- One snapshot for both sums: a call whose usage event committed meanwhile is counted once.
  select coalesce((select sum(u.upstream_cost_usd) from usage_events u
                    where u.provider_credential_id = p_credential_id and u.created_at >= v_month_start), 0)
       + coalesce((select sum(r.amount) from provider_credential_reservations r
                    where r.credential_id = p_credential_id and r.created_at >= v_month_start
                      and (r.expires_at is null or r.expires_at > now())
                      and not exists (select 1 from usage_events u where u.request_id = r.request_id)), 0)
    into v_committed;

  if v_committed + p_amount > v_budget then
    return 'budget_exceeded';
  end if;
  insert into provider_credential_reservations (request_id, credential_id, amount)
  values (p_request_id, p_credential_id, p_amount);
  return 'reserved';
end
$$;
