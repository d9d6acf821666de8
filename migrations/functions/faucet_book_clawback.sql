-- The current definition of faucet_book_clawback (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Book a clawback of developer revenue computed by the caller (workers/shared/ledger/claw-back-revenue.ts):
-- developer wallet −amount (a receivable debit: may go below zero), platform adjustments +amount, and
-- the review row. Once per source transaction.
-- The amount is capped here, under the lock of the end user's wallet (every clawback of that user
-- takes it first), at what the developer earned from that end user less what is already clawed back
-- and not reversed: whatever the caller computed, clawbacks never exceed the revenue they claw back.
-- outcome: 'booked' | 'duplicate' (returns the first) | 'source_reversed' (the chargeback's dispute
-- was won meanwhile: nothing booked) | 'nothing_to_claw_back' (the cap leaves nothing).
create or replace function faucet_book_clawback(
  p_source_transaction_id uuid,
  p_user_wallet_id uuid,
  p_spent numeric,
  p_developer_revenue_basis numeric,
  p_retail_basis numeric,
  p_amount numeric,
  p_request_id text
) returns table (outcome text, clawback_id uuid, amount numeric)
language plpgsql as $$
#variable_conflict use_column
declare
  v_existing revenue_clawbacks%rowtype;
  v_source ledger_transactions%rowtype;
  v_developer_id uuid;
  v_developer_wallet_id uuid;
  v_posted record;
  v_id uuid;
  v_earned numeric(20, 8);
  v_clawed numeric(20, 8);
  v_amount numeric(20, 8);
begin
  if p_amount is null or p_amount <= 0 then
    raise exception 'a clawback needs a positive amount' using errcode = '22023';
  end if;
  -- The wallets this booking touches, in the global order: the end user's first serialises every
  -- clawback of that user, so the cap below sees the ones booked before it.
  perform 1 from wallets w
  where w.id = p_user_wallet_id or w.id = faucet_system_wallet('platform_adjustments')
     or w.id = (select faucet_developer_wallet_of_app(u.app_id) from wallets uw join end_users u on u.id = uw.end_user_id
                where uw.id = p_user_wallet_id)
  order by faucet_wallet_rank(w.kind), w.id
  for no key update;
  select * into v_existing from revenue_clawbacks c where c.source_transaction_id = p_source_transaction_id;
  if found then
    return query select 'duplicate'::text, v_existing.id, v_existing.amount;
    return;
  end if;
  select * into v_source from ledger_transactions t where t.id = p_source_transaction_id;
  -- A dispute already won gave the money back: nothing is left to claw back.
  if exists (select 1 from stripe_disputes d where d.ledger_transaction_id = p_source_transaction_id and d.status = 'won') then
    return query select 'source_reversed'::text, null::uuid, null::numeric;
    return;
  end if;
  select a.developer_id, faucet_developer_wallet_of_app(a.id) into v_developer_id, v_developer_wallet_id
  from wallets w join end_users u on u.id = w.end_user_id join apps a on a.id = u.app_id where w.id = p_user_wallet_id;
  if v_developer_id is null or v_source.id is null then
    raise exception 'clawback source or developer not found' using errcode = 'P0002';
  end if;

  select coalesce(sum(e.developer_revenue_usd), 0) into v_earned
  from usage_events e join wallets w on w.end_user_id = e.end_user_id where w.id = p_user_wallet_id;
  select coalesce(sum(c.amount), 0) into v_clawed
  from revenue_clawbacks c where c.user_wallet_id = p_user_wallet_id and c.status = 'booked';
  v_amount := least(p_amount, greatest(v_earned - v_clawed, 0));
  if v_amount <= 0 then
    return query select 'nothing_to_claw_back'::text, null::uuid, null::numeric;
    return;
  end if;

  select * into v_posted from faucet_post_receivable_debit(
    'revenue_clawback', 'clawback:' || p_source_transaction_id, p_request_id, 'developer revenue of charged-back money',
    jsonb_build_object('source_transaction_id', p_source_transaction_id, 'source_kind', v_source.kind,
                       'user_wallet_id', p_user_wallet_id, 'computed_usd', p_amount::numeric(20, 8)::text),
    v_developer_wallet_id, faucet_system_wallet('platform_adjustments'), v_amount);

  insert into revenue_clawbacks (source_transaction_id, source_kind, user_wallet_id, developer_id, developer_wallet_id,
                                 spent_usd, developer_revenue_basis_usd, retail_basis_usd, amount, ledger_transaction_id)
  values (p_source_transaction_id, v_source.kind, p_user_wallet_id, v_developer_id, v_developer_wallet_id,
          p_spent, p_developer_revenue_basis, p_retail_basis, v_amount, v_posted.transaction_id)
  on conflict (source_transaction_id) do nothing
  returning id into v_id;
  if v_id is null then
    select * into v_existing from revenue_clawbacks c where c.source_transaction_id = p_source_transaction_id;
    return query select 'duplicate'::text, v_existing.id, v_existing.amount;
    return;
  end if;
  insert into audit_logs (actor_type, actor_id, action, target_type, target_id, request_id, metadata)
  values ('system', null, 'clawback.booked', 'revenue_clawback', v_id::text, p_request_id,
          jsonb_build_object('transaction_id', v_posted.transaction_id, 'amount_usd', v_amount,
                             'computed_usd', p_amount::numeric(20, 8), 'source_transaction_id', p_source_transaction_id));
  return query select 'booked'::text, v_id, v_amount::numeric;
end
$$;
