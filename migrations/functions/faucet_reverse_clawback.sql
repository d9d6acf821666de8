-- The current definition of faucet_reverse_clawback (migrations/README.md: edit it here; the runner re-applies a changed file).
-- booked → reversed: the developer is credited back (platform adjustments −amount). Idempotent.
-- outcome: 'reversed' | 'already_reversed' | 'not_found'.
create or replace function faucet_reverse_clawback(p_clawback_id uuid, p_note text, p_actor_type text, p_request_id text)
returns table (outcome text, clawback_id uuid)
language plpgsql as $$
#variable_conflict use_column
declare
  v_clawback revenue_clawbacks%rowtype;
  v_posted record;
begin
  select * into v_clawback from revenue_clawbacks c where c.id = p_clawback_id;
  if not found then
    return query select 'not_found'::text, p_clawback_id;
    return;
  end if;
  -- Wallets before the clawback row, in the global order, as a won dispute (which reverses its
  -- clawback through here) and a new clawback of the same user take them; the other way round deadlocks.
  perform 1 from wallets w
  where w.id in (v_clawback.user_wallet_id, v_clawback.developer_wallet_id, faucet_system_wallet('platform_adjustments'))
  order by faucet_wallet_rank(w.kind), w.id
  for no key update;
  select * into v_clawback from revenue_clawbacks c where c.id = p_clawback_id for update;
  if v_clawback.status = 'reversed' then
    return query select 'already_reversed'::text, p_clawback_id;
    return;
  end if;
  select * into v_posted from faucet_post_transaction(
    'revenue_clawback_reversal', 'clawback_reversal:' || p_clawback_id, p_request_id, p_note,
    jsonb_build_object('clawback_id', p_clawback_id, 'clawback_transaction_id', v_clawback.ledger_transaction_id),
    array[v_clawback.developer_wallet_id, faucet_system_wallet('platform_adjustments')],
    array[v_clawback.amount, -v_clawback.amount]);
  update revenue_clawbacks c set status = 'reversed', reversed_at = now(), reversal_note = p_note,
    reversal_transaction_id = v_posted.transaction_id
  where c.id = p_clawback_id;
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values (p_actor_type, null, 'clawback.reversed', 'revenue_clawback', p_clawback_id::text, p_request_id,
          jsonb_build_object('note', p_note, 'transaction_id', v_posted.transaction_id, 'amount_usd', v_clawback.amount));
  return query select 'reversed'::text, p_clawback_id;
end
$$;
