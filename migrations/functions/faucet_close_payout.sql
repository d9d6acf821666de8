-- The current definition of faucet_close_payout (migrations/README.md: edit it here; the runner re-applies a changed file).
-- pending → cancelled | rejected, releasing the payout's reservation hold in the same statement.
-- outcome: 'closed' | 'already_closed' (this payout is already in the asked state: idempotent) |
-- 'invalid_state' | 'not_found'. One conditional update: of a cancel racing an approve one wins.
create or replace function faucet_close_payout(p_payout_id uuid, p_to text, p_note text, p_request_id text)
returns table (outcome text, payout_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_status text;
begin
  if p_to not in ('cancelled', 'rejected') then
    raise exception 'a payout closes as cancelled or rejected' using errcode = '22023';
  end if;
  update payouts p set status = p_to, operator_note = p_note, closed_at = now()
  where p.id = p_payout_id and p.status = 'pending';
  if not found then
    select p.status into v_status from payouts p where p.id = p_payout_id;
    return query select case when v_status is null then 'not_found' when v_status = p_to then 'already_closed'
      else 'invalid_state' end, p_payout_id;
    return;
  end if;
  update balance_holds h set status = 'released', closed_at = now()
  where h.request_id = 'payout:' || p_payout_id and h.status = 'active';
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values ('admin', null, 'payout.' || p_to, 'payout', p_payout_id::text, p_request_id,
          jsonb_build_object('operator_note', p_note, 'from', 'pending', 'to', p_to));
  return query select 'closed'::text, p_payout_id;
end
$$;
