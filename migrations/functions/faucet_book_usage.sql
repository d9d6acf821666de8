-- The current definition of faucet_book_usage (migrations/README.md: edit it here; the runner re-applies a changed file).
-- Book one rated model call: the usage record, its balanced transaction (user −retail; developer,
-- platform revenue and upstream payable +their shares), the settlement of the call's own hold and
-- the close of its gateway call. Booked once per money key. outcome: 'booked' | 'duplicate'
-- (returns the first booking) | 'insufficient_balance' (balance − other holds < retail and the
-- caller did not allow a receivable: nothing is written). With p_allow_receivable the booking is
-- written anyway and the part the wallet could not cover is recorded as `receivable_usd`.
-- The usage record keeps the catalog version, the token parts and the per-million price of each
-- class the call was rated with (migrations 0013 and 0034, one-hour cache writes): all prices null
-- (no catalog price) or none.
-- A booking that names a gateway call must be that call's (its money key and end user): it closes
-- that call alone. The booking itself is faucet_book_usage_locked, which faucet_book_usage_batch
-- shares: this function locks the user's wallet row, books, and applies the debit to the row.
create or replace function faucet_book_usage(
  p_request_id text,
  p_client_request_id text,
  p_call_id uuid,
  p_app_id uuid,
  p_end_user_id uuid,
  p_feature_key text,
  p_route_mode text,
  p_provider text,
  p_model text,
  p_input_tokens integer,
  p_output_tokens integer,
  p_cached_tokens integer,
  p_estimated boolean,
  p_upstream_cost numeric,
  p_upstream_payable numeric,
  p_retail numeric,
  p_developer_revenue numeric,
  p_platform_share numeric,
  p_provider_credential_id uuid,
  p_metadata jsonb,
  p_allow_receivable boolean,
  p_price_catalog_version text,
  p_cache_write_tokens integer,
  p_audio_input_tokens integer,
  p_audio_output_tokens integer,
  p_reasoning_tokens integer,
  p_input_price numeric,
  p_cached_input_price numeric,
  p_cache_write_price numeric,
  p_audio_input_price numeric,
  p_output_price numeric,
  p_reasoning_price numeric,
  p_audio_output_price numeric,
  p_cache_write_1h_tokens integer,
  p_cache_write_1h_price numeric
) returns table (
  outcome text,
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
language plpgsql as $$
declare
  v_wallet_id uuid;
  v_balance numeric;
  v_booked record;
begin
  select w.id, w.balance into v_wallet_id, v_balance from wallets w where w.end_user_id = p_end_user_id for no key update;
  if not found then
    v_wallet_id := faucet_user_wallet(p_end_user_id);
    select w.balance into v_balance from wallets w where w.id = v_wallet_id for no key update;
  end if;

  select * into v_booked from faucet_book_usage_locked(v_wallet_id, v_balance, array[row(
    p_request_id, p_client_request_id, p_call_id, p_app_id, p_end_user_id, p_feature_key, p_route_mode, p_provider, p_model,
    p_input_tokens, p_output_tokens, p_cached_tokens, p_estimated, p_upstream_cost, p_upstream_payable, p_retail,
    p_developer_revenue, p_platform_share, p_provider_credential_id, p_metadata, p_allow_receivable, p_price_catalog_version,
    p_cache_write_tokens, p_audio_input_tokens, p_audio_output_tokens, p_reasoning_tokens, p_input_price,
    p_cached_input_price, p_cache_write_price, p_audio_input_price, p_output_price, p_reasoning_price, p_audio_output_price,
    p_cache_write_1h_tokens, p_cache_write_1h_price
  )::faucet_usage_booking]) as b;

  -- A refusal is raised with the SQLSTATE the callers map (workers/shared/ledger/database.ts), except
  -- insufficient_balance, which is an outcome.
  case v_booked.reason
    when 'invalid_request' then raise exception '%', v_booked.message using errcode = '22023';
    when 'not_found' then raise exception '%', v_booked.message using errcode = 'P0002';
    when 'conflict' then raise exception '%', v_booked.message using errcode = '23505';
    else null;
  end case;
  if v_booked.outcome = 'booked' and v_booked.retail_usd > 0 then
    update wallets set balance = balance - v_booked.retail_usd where id = v_wallet_id;
  end if;

  return query select case when v_booked.outcome = 'refused' then 'insufficient_balance' else v_booked.outcome end,
    v_booked.usage_event_id, v_booked.ledger_transaction_id, v_booked.upstream_cost_usd, v_booked.retail_usd,
    v_booked.developer_revenue_usd, v_booked.platform_share_usd, v_booked.balance_usd, v_booked.receivable_usd,
    v_booked.created_at;
end
$$;
