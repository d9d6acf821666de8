-- The current definition of faucet_mark_payout_paid (migrations/README.md: edit it here; the runner re-applies a changed file).
-- processing → paid, booking the payout: developer wallet −amount, payment clearing +amount; the
-- reservation hold is settled in the same transaction. outcome: 'paid' | 'invalid_state' | 'not_found'.
create or replace function faucet_mark_payout_paid(p_payout_id uuid, p_note text, p_request_id text)
returns table (outcome text, payout_id uuid, ledger_transaction_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_wallet_id uuid;
  v_payout payouts%rowtype;
  v_posted record;
begin
  select p.wallet_id into v_wallet_id from payouts p where p.id = p_payout_id;
  if not found then
    return query select 'not_found'::text, p_payout_id, null::uuid;
    return;
  end if;
  perform 1 from wallets w where w.id = v_wallet_id for no key update;

  update payouts p set status = 'paid', paid_at = now(), operator_note = coalesce(p_note, p.operator_note)
  where p.id = p_payout_id and p.status = 'processing'
  returning * into v_payout;
  if not found then
    return query select 'invalid_state'::text, p_payout_id, null::uuid;
    return;
  end if;

  update balance_holds h set status = 'settled', closed_at = now()
  where h.request_id = 'payout:' || p_payout_id and h.status = 'active';
  select * into v_posted from faucet_post_transaction(
    'payout', 'payout:' || p_payout_id, p_request_id, 'mock payout',
    jsonb_build_object('payout_id', p_payout_id, 'mock', true),
    array[v_payout.wallet_id, faucet_system_wallet('payment_clearing')],
    array[-v_payout.amount, v_payout.amount]);
  if v_posted.outcome <> 'posted' then
    raise exception 'payout % could not be booked: %', p_payout_id, v_posted.outcome using errcode = '23514';
  end if;

  update payouts p set ledger_transaction_id = v_posted.transaction_id where p.id = p_payout_id;
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values ('admin', null, 'payout.paid', 'payout', p_payout_id::text, p_request_id,
          jsonb_build_object('transaction_id', v_posted.transaction_id, 'amount_usd', v_payout.amount,
                             'from', 'processing', 'to', 'paid'));
  return query select 'paid'::text, p_payout_id, v_posted.transaction_id;
end
$$;
