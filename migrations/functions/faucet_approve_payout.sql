-- The current definition of faucet_approve_payout (migrations/README.md: edit it here; the runner re-applies a changed file).
-- pending → processing. outcome: 'approved' | 'invalid_state' | 'not_found'.
create or replace function faucet_approve_payout(p_payout_id uuid, p_note text, p_request_id text)
returns table (outcome text, payout_id uuid)
language plpgsql as $$
#variable_conflict use_column
begin
  update payouts p set status = 'processing', operator_note = p_note, approved_at = now()
  where p.id = p_payout_id and p.status = 'pending';
  if not found then
    return query select case when exists (select 1 from payouts p where p.id = p_payout_id)
      then 'invalid_state' else 'not_found' end, p_payout_id;
    return;
  end if;
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values ('admin', null, 'payout.approved', 'payout', p_payout_id::text, p_request_id,
          jsonb_build_object('operator_note', p_note, 'from', 'pending', 'to', 'processing'));
  return query select 'approved'::text, p_payout_id;
end
$$;
