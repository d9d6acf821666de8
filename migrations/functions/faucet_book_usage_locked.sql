-- The current definition of faucet_book_usage_locked (migrations/README.md: edit it here; the runner re-applies a changed file).
-- The one definition of booking rated model calls of one end user's wallet, shared by
-- faucet_book_usage (an array of one) and faucet_book_usage_batch (a flush of many), so the two
-- cannot drift. Per booking: the usage record (with the catalog version, token parts and prices it
-- was rated with), its balanced transaction (user −retail; developer, platform revenue and upstream
-- payable +their shares), the settlement of the call's own hold and the close of its gateway call,
-- once per money key (request_id). Written set-based: one statement judges every element, one
-- writes every booked one (the hot accounts' credits appended as one balance delta per account);
-- the ids of the new rows are drawn here, so the result needs no read back.
--
-- The caller holds the wallet row locked (`for no key update`), passes its balance, and subtracts
-- the retail of every `booked` row from it afterwards (one update per wallet). Bookings are judged
-- in array order exactly as that many single bookings in a row would be: each is covered by the
-- balance the ones before it left, minus the active holds of other calls (a booked call's own hold
-- is settled, so it stops counting for the next). One row per element (`ordinal` = its position):
--   booked     written now;
--   duplicate  its money key was booked before (or earlier in this array): that booking's amounts;
--   refused    nothing written; reason: invalid_request (not of this wallet's end user; a lease key; amounts
--              missing, negative, past 8 decimals or not adding up; a required field missing),
--              not_found (the call named is not this booking's own call; no such app or
--              credential), conflict (the money key was booked for another end user),
--              insufficient_balance (the wallet cannot cover the retail and
--              no receivable is allowed; with allow_receivable the booking is written and the part
--              not covered recorded as `receivable_usd`).
-- A constraint the checks above do not foresee fails the statement: the caller decides (the batch
-- retries element by element, each in a savepoint).
create or replace function faucet_book_usage_locked(p_wallet_id uuid, p_balance numeric, p_bookings faucet_usage_booking[])
returns table (
  ordinal integer,
  outcome text,
  reason text,
  message text,
  usage_event_id uuid,
  ledger_transaction_id uuid,
  upstream_cost_usd numeric,
  retail_usd numeric,
  developer_revenue_usd numeric,
  platform_share_usd numeric,
  balance_usd numeric,
  receivable_usd numeric,
  created_at timestamptz
)
language plpgsql
-- Default plan caching, on purpose: forced generic plans were faster on one connection, but a plan
-- made while the tables were small was kept for the session and fell behind as they grew (docs/edge.md).
as $$
#variable_conflict use_column
declare
  v_count integer := cardinality(p_bookings);
  v_end_user_id uuid;
  v_balance numeric := p_balance;
  v_held numeric;
  v_row record;
  v_covered numeric;
  v_first integer;
  -- The result, indexed by position 1..n (an empty array assigned at [k] would start at k).
  v_outcomes text[] := array_fill(null::text, array[v_count]);
  v_reasons text[] := array_fill(null::text, array[v_count]);
  v_messages text[] := array_fill(null::text, array[v_count]);
  v_event_ids uuid[] := array_fill(null::uuid, array[v_count]);
  v_transaction_ids uuid[] := array_fill(null::uuid, array[v_count]);
  v_costs numeric[] := array_fill(null::numeric, array[v_count]);
  v_retails numeric[] := array_fill(null::numeric, array[v_count]);
  v_developer_revenues numeric[] := array_fill(null::numeric, array[v_count]);
  v_platform_shares numeric[] := array_fill(null::numeric, array[v_count]);
  v_balances numeric[] := array_fill(null::numeric, array[v_count]);
  v_receivables numeric[] := array_fill(null::numeric, array[v_count]);
  v_created timestamptz[] := array_fill(null::timestamptz, array[v_count]);
  -- The booked elements, in order: position, money key, call.
  v_booked integer[] := '{}';
  v_booked_keys text[] := '{}';
  v_booked_calls uuid[] := '{}';
  v_developer_wallets uuid[];
  v_revenue_id uuid;
  v_payable_id uuid;
begin
  select w.end_user_id into v_end_user_id from wallets w where w.id = p_wallet_id;
  v_held := faucet_held(p_wallet_id, null);
  for v_row in
    select b.ordinality::integer as position, b.request_id, b.call_id, g.status as call_status, b.retail, b.allow_receivable, b.upstream_cost,
           b.developer_revenue, b.platform_share, u.id as event_id, u.ledger_transaction_id, u.upstream_cost_usd,
           u.retail_usd, u.developer_revenue_usd, u.platform_share_usd, u.receivable_usd, u.created_at,
           -- Found by its money key alone (unique), then compared: not a walk of the wallet's active holds.
           (select case when h.wallet_id = p_wallet_id and h.status = 'active' and h.expires_at > now() then h.amount end
              from balance_holds h where h.request_id = b.request_id) as own_hold,
           case
             when b.end_user_id is distinct from v_end_user_id
               then 'invalid_request:the booking is not of this wallet''s end user'
             -- A wallet object's lease (faucet_settle_lease) is a hold, never a booking's own hold.
             when b.request_id like 'lease:%'
               then 'invalid_request:a booking cannot use a lease key'
             when num_nulls(b.request_id, b.app_id, b.end_user_id, b.feature_key, b.route_mode, b.provider, b.model,
                            b.input_tokens, b.output_tokens, b.cached_tokens, b.estimated, b.allow_receivable,
                            b.cache_write_tokens, b.audio_input_tokens, b.audio_output_tokens, b.reasoning_tokens) > 0
               then 'invalid_request:a required field is missing'
             when num_nulls(b.upstream_cost, b.upstream_payable, b.retail, b.developer_revenue, b.platform_share) > 0
                  or least(b.upstream_cost, b.upstream_payable, b.retail, b.developer_revenue, b.platform_share) < 0
                  or b.retail <> b.upstream_payable + b.developer_revenue + b.platform_share
                  or b.upstream_cost <> round(b.upstream_cost, 8) or b.upstream_payable <> round(b.upstream_payable, 8)
                  or b.retail <> round(b.retail, 8) or b.developer_revenue <> round(b.developer_revenue, 8)
                  or b.platform_share <> round(b.platform_share, 8)
               then 'invalid_request:rated amounts must be non-negative, of at most 8 decimals, and retail must equal payable + developer + platform'
             -- Each lookup is one index probe per element, never a hashed scan of a whole table
             -- (`offset 0`: the planner hashed gateway_calls and apps in the ledger bench); the call's
             -- is the lateral join below.
             when b.call_id is not null and (g.money_key = b.request_id and g.end_user_id = b.end_user_id) is not true
               then 'not_found:no such gateway call for this booking'
             when u.id is not null and u.end_user_id is distinct from b.end_user_id
               then 'conflict:request id already booked for another end user'
             when u.id is null and not exists (select 1 from apps a where a.id = b.app_id offset 0)
               then 'not_found:no such app'
             when u.id is null and b.provider_credential_id is not null
                  and not exists (select 1 from provider_credentials c where c.id = b.provider_credential_id offset 0)
               then 'not_found:no such provider credential'
           end as refusal
      from unnest(p_bookings) with ordinality as b
      -- Lateral, kept a subquery by `offset 0`: one index lookup per element. Without the fence the
      -- planner flattened it into a join and, for a batch of 50–200 elements, hashed a sequential scan of
      -- all of usage_events (seen in the ledger bench: a scan per flush, growing with the table).
      left join lateral (select x.* from usage_events x where x.request_id = b.request_id offset 0) as u on true
      -- The call named, by its id alone and then compared (one probe): with the three conditions in
      -- the index search the plan cached while the table was small read every call of the end user
      -- (gateway_calls_end_user_created) for each booking. Its status tells whether booking closes it.
      left join lateral (select x.money_key, x.end_user_id, x.status from gateway_calls x where x.id = b.call_id offset 0) as g
        on true
     order by b.ordinality
  loop
    v_balances[v_row.position] := v_balance;
    v_first := case when v_row.request_id is not null then array_position(v_booked_keys, v_row.request_id) end;
    if v_row.refusal is not null then
      v_outcomes[v_row.position] := 'refused';
      v_reasons[v_row.position] := split_part(v_row.refusal, ':', 1);
      v_messages[v_row.position] := substr(v_row.refusal, strpos(v_row.refusal, ':') + 1);
      v_retails[v_row.position] := v_row.retail;
    elsif v_row.event_id is not null then
      v_outcomes[v_row.position] := 'duplicate';
      v_event_ids[v_row.position] := v_row.event_id;
      v_transaction_ids[v_row.position] := v_row.ledger_transaction_id;
      v_costs[v_row.position] := v_row.upstream_cost_usd;
      v_retails[v_row.position] := v_row.retail_usd;
      v_developer_revenues[v_row.position] := v_row.developer_revenue_usd;
      v_platform_shares[v_row.position] := v_row.platform_share_usd;
      v_receivables[v_row.position] := v_row.receivable_usd;
      v_created[v_row.position] := v_row.created_at;
    elsif v_first is not null then
      -- The same money key booked earlier in this array: that booking.
      v_first := v_booked[v_first];
      v_outcomes[v_row.position] := 'duplicate';
      v_event_ids[v_row.position] := v_event_ids[v_first];
      v_transaction_ids[v_row.position] := v_transaction_ids[v_first];
      v_costs[v_row.position] := v_costs[v_first];
      v_retails[v_row.position] := v_retails[v_first];
      v_developer_revenues[v_row.position] := v_developer_revenues[v_first];
      v_platform_shares[v_row.position] := v_platform_shares[v_first];
      v_receivables[v_row.position] := v_receivables[v_first];
      v_created[v_row.position] := v_created[v_first];
    else
      v_covered := greatest(v_balance - (v_held - coalesce(v_row.own_hold, 0)), 0);
      v_retails[v_row.position] := v_row.retail;
      if v_row.retail > 0 and v_covered < v_row.retail and not v_row.allow_receivable then
        v_outcomes[v_row.position] := 'refused';
        v_reasons[v_row.position] := 'insufficient_balance';
        v_messages[v_row.position] := 'the wallet cannot cover this booking';
      else
        v_outcomes[v_row.position] := 'booked';
        v_event_ids[v_row.position] := gen_random_uuid();
        v_transaction_ids[v_row.position] := case when v_row.retail > 0 then gen_random_uuid() end;
        v_costs[v_row.position] := v_row.upstream_cost;
        v_developer_revenues[v_row.position] := v_row.developer_revenue;
        v_platform_shares[v_row.position] := v_row.platform_share;
        v_receivables[v_row.position] := case when v_row.retail > 0 then greatest(v_row.retail - v_covered, 0) else 0 end;
        v_created[v_row.position] := now();
        v_balance := v_balance - v_row.retail;
        v_balances[v_row.position] := v_balance;
        v_held := v_held - coalesce(v_row.own_hold, 0);
        v_booked := v_booked || v_row.position;
        v_booked_keys := v_booked_keys || v_row.request_id;
        -- Only a call still in flight is closed (faucet_settle_lease writes its records closed).
        if v_row.call_id is not null and v_row.call_status = 'in_flight' then
          v_booked_calls := v_booked_calls || v_row.call_id;
        end if;
      end if;
    end if;
  end loop;

  if cardinality(v_booked) > 0 then
    select (array_agg(w.id) filter (where w.kind = 'platform_revenue'))[1], (array_agg(w.id) filter (where w.kind = 'platform_upstream_payable'))[1]
      into v_revenue_id, v_payable_id
      from wallets w where w.kind in ('platform_revenue', 'platform_upstream_payable') and w.end_user_id is null and w.developer_id is null;
    if v_revenue_id is null or v_payable_id is null then
      raise exception 'platform accounts are missing' using errcode = 'P0002';
    end if;

    -- Per booked element (aligned with v_booked): its developer's wallet (created on first use).
    select array_agg(d.wallet_id order by p.n) into v_developer_wallets
      from unnest(v_booked) with ordinality as p(position, n)
      join unnest(p_bookings) with ordinality as b on b.ordinality = p.position
      join (select a.app_id,
                   coalesce((select w.id from apps x join wallets w on w.developer_id = x.developer_id where x.id = a.app_id),
                            faucet_developer_wallet_of_app(a.app_id)) as wallet_id
              -- A join, not `ordinality = any (v_booked)` (a scan of v_booked per element).
              from (select distinct b.app_id from unnest(v_booked) as q(position)
                      join unnest(p_bookings) with ordinality as b on b.ordinality = q.position) as a(app_id)) as d
        on d.app_id = b.app_id;

    -- Every write but the calls' close in one statement (the foreign keys are checked at its end, when all rows exist).
    with booked as (
      select t.position, v_event_ids[t.position] as event_id, v_transaction_ids[t.position] as transaction_id,
             t.developer_wallet_id, b.*
        from unnest(v_booked, v_developer_wallets) as t(position, developer_wallet_id)
        join unnest(p_bookings) with ordinality as b on b.ordinality = t.position
    ), transactions as (
      insert into ledger_transactions (id, kind, idempotency_key, request_id, reason, metadata)
      select k.transaction_id, 'usage', 'usage:' || k.request_id, coalesce(k.client_request_id, k.request_id), null,
             coalesce(k.metadata, '{}'::jsonb)
        from booked k where k.retail > 0 order by k.position
    ), events as (
      insert into usage_events (
        id, request_id, client_request_id, call_id, app_id, end_user_id, feature_key, route_mode, provider, model,
        input_tokens, output_tokens, cached_tokens, estimated, upstream_cost_usd, retail_usd, developer_revenue_usd,
        platform_share_usd, provider_credential_id, ledger_transaction_id, receivable_usd, price_catalog_version,
        cache_write_tokens, audio_input_tokens, audio_output_tokens, reasoning_tokens, input_price_per_mtok_usd,
        cached_input_price_per_mtok_usd, cache_write_price_per_mtok_usd, audio_input_price_per_mtok_usd,
        output_price_per_mtok_usd, reasoning_price_per_mtok_usd, audio_output_price_per_mtok_usd,
        cache_write_1h_tokens, cache_write_1h_price_per_mtok_usd
      )
      select k.event_id, k.request_id, k.client_request_id, k.call_id, k.app_id, k.end_user_id, k.feature_key, k.route_mode, k.provider,
             k.model, k.input_tokens, k.output_tokens, k.cached_tokens, k.estimated, k.upstream_cost, k.retail,
             k.developer_revenue, k.platform_share, k.provider_credential_id,
             k.transaction_id, v_receivables[k.position], k.price_catalog_version,
             k.cache_write_tokens, k.audio_input_tokens, k.audio_output_tokens, k.reasoning_tokens, k.input_price,
             k.cached_input_price, k.cache_write_price, k.audio_input_price, k.output_price, k.reasoning_price,
             k.audio_output_price,
             -- Optional (migration 0034): a settlement kept from before carries neither.
             coalesce(k.cache_write_1h_tokens, 0), k.cache_write_1h_price
        from booked k order by k.position
    ), credits as (
      select k.position, k.transaction_id, e.wallet_id, e.amount
        from booked k
        cross join lateral (values (p_wallet_id, -k.retail), (k.developer_wallet_id, k.developer_revenue),
                                   (v_revenue_id, k.platform_share), (v_payable_id, k.upstream_payable)) as e(wallet_id, amount)
       where k.retail > 0 and e.amount <> 0
    ), entries as (
      insert into ledger_entries (transaction_id, wallet_id, amount)
      select c.transaction_id, c.wallet_id, c.amount from credits c order by c.position
    ), deltas as (
      -- The hot accounts' credits are appended, not applied (one delta per account): no booking waits for another's commit.
      insert into wallet_balance_deltas (wallet_id, amount)
      select c.wallet_id, sum(c.amount) from credits c where c.wallet_id <> p_wallet_id group by c.wallet_id order by c.wallet_id
    )
    -- Only each call's own hold is settled (a hold is keyed by the same money key).
    update balance_holds h set status = 'settled', closed_at = now()
     where h.request_id = any (v_booked_keys) and h.wallet_id = p_wallet_id and h.status = 'active';

    -- The calls booked that were in flight when judged are closed (a record written closed by
    -- faucet_settle_lease is not probed again). By primary key, one probe per call; the status is
    -- checked again because it was read before this statement: `status <> all (settled, abandoned)` is `status = 'in_flight'`
    -- (the table's check allows only those three) in a form that keeps the planner off the partial
    -- in-flight indexes, which it scanned whole — every entry, dead ones of closed calls included —
    -- for each booking (the per-call booking after bulk flushes fell to half its rate in the bench).
    if cardinality(v_booked_calls) > 0 then
      update gateway_calls g set status = 'settled', closed_at = now()
       where g.id = any (v_booked_calls) and g.status <> all (array['settled', 'abandoned']);
    end if;
  end if;

  return query
  select r.position::integer, r.outcome, r.reason, r.message, r.event_id, r.transaction_id, r.cost::numeric(20, 8),
         r.retail::numeric(20, 8), r.developer_revenue::numeric(20, 8), r.platform_share::numeric(20, 8),
         r.balance::numeric(20, 8), r.receivable::numeric(20, 8), r.created
    from unnest(v_outcomes, v_reasons, v_messages, v_event_ids, v_transaction_ids, v_costs, v_retails, v_developer_revenues,
                v_platform_shares, v_balances, v_receivables, v_created) with ordinality
         as r(outcome, reason, message, event_id, transaction_id, cost, retail, developer_revenue, platform_share, balance,
              receivable, created, position);
end
$$;
