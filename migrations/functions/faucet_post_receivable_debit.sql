-- The current definition of faucet_post_receivable_debit (migrations/README.md: edit it here; the runner re-applies a changed file).
-- A debit that is booked even below zero (chargebacks, provider refunds, clawbacks): the wallet is
-- debited, the counter-account credited, and the part below zero recorded as a receivable.
-- outcome: 'posted' | 'duplicate' (same idempotency key: that transaction, its metadata). The
-- metadata records balance_before_usd, spent_usd (the part of the amount the wallet no longer held)
-- and receivable_usd (the part booked below zero; equal to spent_usd).
create or replace function faucet_post_receivable_debit(
  p_kind text,
  p_idempotency_key text,
  p_request_id text,
  p_reason text,
  p_metadata jsonb,
  p_wallet_id uuid,
  p_counter_wallet_id uuid,
  p_amount numeric
) returns table (outcome text, transaction_id uuid, metadata jsonb, created_at timestamptz)
language plpgsql as $$
#variable_conflict use_column
declare
  v_transaction ledger_transactions%rowtype;
  v_before numeric;
  v_spent numeric;
begin
  if p_amount is null or p_amount <= 0 or p_idempotency_key is null or p_wallet_id = p_counter_wallet_id then
    raise exception 'a receivable debit needs a positive amount, a key and two wallets' using errcode = '22023';
  end if;
  perform 1 from wallets w where w.id in (p_wallet_id, p_counter_wallet_id)
  order by faucet_wallet_rank(w.kind), w.id
  for no key update;
  if (select count(*) from wallets w where w.id in (p_wallet_id, p_counter_wallet_id)) <> 2 then
    raise exception 'unknown wallet in transaction' using errcode = 'P0002';
  end if;
  perform faucet_roll_up_locked(p_wallet_id);
  perform faucet_roll_up_locked(p_counter_wallet_id);

  select * into v_transaction from ledger_transactions t where t.idempotency_key = p_idempotency_key;
  if found then
    return query select 'duplicate'::text, v_transaction.id, v_transaction.metadata, v_transaction.created_at;
    return;
  end if;

  select w.balance into v_before from wallets w where w.id = p_wallet_id;
  v_spent := p_amount - least(greatest(v_before, 0), p_amount);

  insert into ledger_transactions (kind, idempotency_key, request_id, reason, metadata)
  values (p_kind, p_idempotency_key, p_request_id, p_reason,
          coalesce(p_metadata, '{}'::jsonb) || jsonb_build_object(
            'balance_before_usd', v_before::numeric(20, 8)::text,
            'spent_usd', v_spent::numeric(20, 8)::text,
            'receivable_usd', v_spent::numeric(20, 8)::text))
  returning * into v_transaction;

  if v_spent > 0 then
    update wallets set receivable = true where id = p_wallet_id and not allow_negative;
    insert into receivables (wallet_id, ledger_transaction_id, kind, amount)
    values (p_wallet_id, v_transaction.id, p_kind, v_spent);
  end if;
  perform faucet_apply_entries(v_transaction.id, array[p_wallet_id, p_counter_wallet_id], array[-p_amount, p_amount]);
  return query select 'posted'::text, v_transaction.id, v_transaction.metadata, v_transaction.created_at;
end
$$;
