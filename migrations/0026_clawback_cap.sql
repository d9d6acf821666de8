-- faucet_book_clawback answers the amount it booked (capped at what the developer earned from the end
-- user, less what is already clawed back); its return type changes, so the old one goes first.
drop function if exists faucet_book_clawback(uuid, uuid, numeric, numeric, numeric, numeric, text);

-- The cap and the reconciliation sum a user's clawbacks still booked.
create index if not exists revenue_clawbacks_user_wallet on revenue_clawbacks (user_wallet_id) where status = 'booked';

-- What Stripe took back from a checkout (refunds and disputes booked, less disputes won): a refund and a
-- dispute of the same charge together never take back more than the checkout credited.
alter table checkout_sessions add column if not exists reversed_cents bigint not null default 0;
update checkout_sessions c set reversed_cents =
  coalesce((select sum(s.refunded_cents) from stripe_charges s where s.checkout_session_id = c.id), 0)
  + coalesce((select sum(d.amount_cents) from stripe_disputes d
              where d.checkout_session_id = c.id and d.ledger_transaction_id is not null and d.status <> 'won'), 0)
where c.status = 'completed';
