-- The current definition of faucet_create_payouts (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Payout runs must see a developer's usage revenue that is still pending in wallet_balance_deltas
-- (hot accounts are append-only, see 0002). Fold it into the balance row under the row lock first.
create or replace function faucet_create_payouts(p_threshold numeric, p_request_id text)
returns setof payouts
language plpgsql as $$
declare
  r record;
  v_available numeric(20, 8);
  v_payout payouts%rowtype;
begin
  if p_threshold is null or p_threshold <= 0 then
    raise exception 'threshold must be positive' using errcode = '22023';
  end if;
  for r in
    -- A suspended developer's money stays in their wallet until the suspension is lifted.
    select w.id, w.developer_id from wallets w join developers d on d.id = w.developer_id
    where w.kind = 'developer' and d.suspended_at is null
      and not exists (select 1 from payouts p where p.wallet_id = w.id and p.status in ('pending', 'processing'))
    order by w.id
  loop
    perform 1 from wallets w where w.id = r.id for no key update;
    perform faucet_roll_up_locked(r.id);
    select (w.balance - faucet_held(w.id, null))::numeric(20, 8) into v_available from wallets w where w.id = r.id;
    continue when v_available < p_threshold;

    insert into payouts (developer_id, wallet_id, amount) values (r.developer_id, r.id, v_available)
    on conflict (wallet_id) where status in ('pending', 'processing') do nothing
    returning * into v_payout;
    continue when not found;

    insert into balance_holds (wallet_id, request_id, amount, expires_at)
    values (r.id, 'payout:' || v_payout.id, v_available, 'infinity');
    insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
    values ('admin', null, 'payout.created', 'payout', v_payout.id::text, p_request_id,
            jsonb_build_object('amount_usd', v_payout.amount, 'threshold_usd', p_threshold::numeric(20, 8)));
    return next v_payout;
  end loop;
end
$$;
