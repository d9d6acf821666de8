-- The current definition of faucet_post_transaction (migrations/README.md: edit it here; the runner re-applies a changed file).
-- One balanced transaction of any kind (adjustments, top-ups, payouts, ...).
-- outcome: 'posted' | 'duplicate' (same idempotency key seen before: returns that transaction)
--        | 'insufficient_balance' (a debit would take a wallet below zero, counting its holds).
create or replace function faucet_post_transaction(
  p_kind text,
  p_idempotency_key text,
  p_request_id text,
  p_reason text,
  p_metadata jsonb,
  p_wallet_ids uuid[],
  p_amounts numeric[]
) returns table (outcome text, transaction_id uuid, metadata jsonb, created_at timestamptz)
language plpgsql as $$
#variable_conflict use_column
declare
  v_transaction ledger_transactions%rowtype;
  r record;
begin
  if coalesce(array_length(p_wallet_ids, 1), 0) < 2 or array_length(p_wallet_ids, 1) <> array_length(p_amounts, 1) then
    raise exception 'a transaction needs at least two entries' using errcode = '22023';
  end if;
  if (select sum(a) from unnest(p_amounts) as a) <> 0 then
    raise exception 'entries of a transaction must sum to zero' using errcode = '22023';
  end if;

  perform 1 from wallets w where w.id = any (p_wallet_ids)
  order by faucet_wallet_rank(w.kind), w.id
  for no key update;
  if (select count(*) from wallets w where w.id = any (p_wallet_ids)) <> (select count(distinct x) from unnest(p_wallet_ids) as x) then
    raise exception 'unknown wallet in transaction' using errcode = 'P0002';
  end if;
  perform faucet_roll_up_locked(x) from (select distinct x from unnest(p_wallet_ids) as x) as ids;

  if p_idempotency_key is not null then
    select * into v_transaction from ledger_transactions t where t.idempotency_key = p_idempotency_key;
    if found then
      return query select 'duplicate'::text, v_transaction.id, v_transaction.metadata, v_transaction.created_at;
      return;
    end if;
  end if;

  for r in
    select w.id, w.balance, w.allow_negative, sum(t.amount) as delta
    from unnest(p_wallet_ids, p_amounts) as t(wallet_id, amount)
    join wallets w on w.id = t.wallet_id
    group by w.id
  loop
    if r.delta < 0 and not r.allow_negative and r.balance - faucet_held(r.id, null) + r.delta < 0 then
      return query select 'insufficient_balance'::text, null::uuid, null::jsonb, null::timestamptz;
      return;
    end if;
  end loop;

  insert into ledger_transactions (kind, idempotency_key, request_id, reason, metadata)
  values (p_kind, p_idempotency_key, p_request_id, p_reason, coalesce(p_metadata, '{}'::jsonb))
  on conflict (idempotency_key) do nothing
  returning * into v_transaction;
  if v_transaction.id is null then
    -- Same key committed meanwhile by a transaction over other wallets.
    select * into v_transaction from ledger_transactions t where t.idempotency_key = p_idempotency_key;
    return query select 'duplicate'::text, v_transaction.id, v_transaction.metadata, v_transaction.created_at;
    return;
  end if;

  perform faucet_apply_entries(v_transaction.id, p_wallet_ids, p_amounts);
  return query select 'posted'::text, v_transaction.id, v_transaction.metadata, v_transaction.created_at;
end
$$;
