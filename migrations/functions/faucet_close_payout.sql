-- The current definition of faucet_close_payout (migrations/README.md: edit it here; the runner re-applies a changed file).
-- pending → cancelled | rejected, releasing the payout's reservation hold in the same statement.
-- An approved (processing) payout closes too, but only once it can no longer be paid: a clawback took
-- its wallet below the amount, so mark-paid answers 402 and nothing else would ever end it.
-- outcome: 'closed' | 'already_closed' (this payout is already in the asked state: idempotent) |
-- 'invalid_state' | 'not_found'. Under the wallet's lock, then the payout row's (0003's order): of a
-- cancel racing an approve, a mark-paid or a reject exactly one takes effect.
create or replace function faucet_close_payout(p_payout_id uuid, p_to text, p_note text, p_request_id text)
returns table (outcome text, payout_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_payout payouts%rowtype;
begin
  if p_to not in ('cancelled', 'rejected') then
    raise exception 'a payout closes as cancelled or rejected' using errcode = '22023';
  end if;
  select * into v_payout from payouts p where p.id = p_payout_id;
  if not found then
    return query select 'not_found'::text, p_payout_id;
    return;
  end if;
  perform 1 from wallets w where w.id = v_payout.wallet_id for no key update;
  select * into v_payout from payouts p where p.id = p_payout_id for update;
  if v_payout.status = p_to then
    return query select 'already_closed'::text, p_payout_id;
    return;
  end if;
  if v_payout.status <> 'pending' and not (
    v_payout.status = 'processing'
    and faucet_wallet_balance(v_payout.wallet_id) - faucet_held(v_payout.wallet_id, 'payout:' || p_payout_id) < v_payout.amount
  ) then
    return query select 'invalid_state'::text, p_payout_id;
    return;
  end if;

  update payouts p set status = p_to, operator_note = p_note, closed_at = now() where p.id = p_payout_id;
  update balance_holds h set status = 'released', closed_at = now()
  where h.request_id = 'payout:' || p_payout_id and h.status = 'active';
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values ('admin', null, 'payout.' || p_to, 'payout', p_payout_id::text, p_request_id,
          jsonb_build_object('operator_note', p_note, 'from', v_payout.status, 'to', p_to));
  return query select 'closed'::text, p_payout_id;
end
$$;
