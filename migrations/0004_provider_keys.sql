-- Provider keys (BYOK and developer keys, docs/provider-keys.md): owner columns that agree with
-- owner_type, at most one active key per owner and provider (routing is then deterministic), and
-- the developer keys' monthly budget, enforced by reservations taken under the key's row lock.
-- Idempotent: `if not exists`, `create or replace`, and duplicate constraints ignored.

do $$ begin
  alter table provider_credentials add constraint provider_credentials_owner check (
    (owner_type = 'end_user' and end_user_id is not null and developer_id is null and monthly_budget_usd is null)
    or (owner_type = 'developer' and developer_id is not null and end_user_id is null and monthly_budget_usd >= 0));
exception when duplicate_object then null;
end $$;

do $$ begin
  alter table provider_credentials add constraint provider_credentials_status check (
    (status = 'active' and disabled_at is null) or (status = 'disabled' and disabled_at is not null));
exception when duplicate_object then null;
end $$;

create unique index if not exists provider_credentials_one_active_end_user
  on provider_credentials (end_user_id, provider) where status = 'active' and owner_type = 'end_user';
create unique index if not exists provider_credentials_one_active_developer
  on provider_credentials (developer_id, provider) where status = 'active' and owner_type = 'developer';

-- A developer-key call in flight: the upper bound of its upstream cost, counted against the key's
-- monthly budget until the call's usage event exists (then its recorded cost counts instead) or
-- the call is abandoned (the row is deleted). Reservations of an earlier month no longer count.
create table if not exists provider_credential_reservations (
  request_id text primary key,
  credential_id uuid not null references provider_credentials(id),
  amount numeric(20, 8) not null check (amount >= 0),
  created_at timestamptz not null default now()
);
create index if not exists provider_credential_reservations_credential
  on provider_credential_reservations (credential_id);

-- The calendar month (UTC) that `p_at` falls in starts at this instant.
create or replace function faucet_month_start(p_at timestamptz) returns timestamptz
language sql immutable as $$
  select date_trunc('month', p_at at time zone 'UTC') at time zone 'UTC'
$$;

-- Reserve `p_amount` of a developer key's monthly budget for one call. One statement for the
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

  -- Housekeeping under the lock: settled reservations (their usage event exists) and those of an
  -- earlier month no longer count.
  delete from provider_credential_reservations r
   where r.credential_id = p_credential_id
     and (r.created_at < v_month_start or exists (select 1 from usage_events u where u.request_id = r.request_id));

  if exists (select 1 from provider_credential_reservations r where r.request_id = p_request_id) then
    return 'duplicate';
  end if;

  -- One snapshot for both sums: a call whose usage event committed meanwhile is counted once.
  select coalesce((select sum(u.upstream_cost_usd) from usage_events u
                    where u.provider_credential_id = p_credential_id and u.created_at >= v_month_start), 0)
       + coalesce((select sum(r.amount) from provider_credential_reservations r
                    where r.credential_id = p_credential_id and r.created_at >= v_month_start
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
