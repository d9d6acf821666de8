-- Chargebacks and refunds after the credit is spent (docs/payments.md, "Chargebacks, refunds and
-- clawbacks"). A provider refund or chargeback is booked even when it takes the wallet below zero:
-- the part below zero is a receivable, recorded row by row, and a wallet may hold a negative balance
-- only while it is flagged as holding one. The developer revenue earned from the spent money is
-- clawed back by a reviewable entry; payouts gain cancel/reject from pending.
--
-- Lock order is 0002's and 0003's: checkout session or payout rows before wallets, wallets in
-- (rank, id) order.

-- Which payment a checkout session was paid with: charges, refunds and disputes name the payment
-- intent, never the session.
alter table checkout_sessions add column if not exists stripe_payment_intent_id text;
create unique index if not exists checkout_sessions_payment_intent on checkout_sessions (stripe_payment_intent_id)
  where stripe_payment_intent_id is not null;

-- A wallet below zero holds a receivable. User wallets may already go below zero through the
-- bookings of 0006 (usage_events.receivable_usd); a developer wallet only through a clawback, which
-- sets this flag (faucet_post_receivable_debit). Every other debit still refuses to go below zero (it
-- checks allow_negative and holds, not this flag). The constraint keeps 0006's name, so that running
-- 0006 again leaves this definition in place.
alter table wallets add column if not exists receivable boolean not null default false;
alter table wallets drop constraint if exists wallets_non_negative;
alter table wallets drop constraint if exists wallets_non_negative_unless_receivable;
alter table wallets add constraint wallets_non_negative_unless_receivable
  check (allow_negative or kind = 'user' or receivable or balance >= 0);

-- The part of each debit that went below zero: what the owner owes the platform, one row per booking.
create table if not exists receivables (
  id uuid primary key default gen_random_uuid(),
  wallet_id uuid not null references wallets(id),
  ledger_transaction_id uuid not null unique references ledger_transactions(id),
  kind text not null,
  amount numeric(20, 8) not null,
  created_at timestamptz not null default now(),
  constraint receivables_positive check (amount > 0)
);
create index if not exists receivables_wallet on receivables (wallet_id);

-- What has been booked per Stripe charge: refunds arrive as a cumulative `amount_refunded`, so each
-- event books only the increase over the last booked total.
create table if not exists stripe_charges (
  charge_id text primary key,
  payment_intent_id text not null,
  checkout_session_id uuid not null references checkout_sessions(id),
  refunded_cents bigint not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- A dispute is booked once when created and credited back once if won.
create table if not exists stripe_disputes (
  dispute_id text primary key,
  charge_id text not null,
  checkout_session_id uuid not null references checkout_sessions(id),
  amount_cents bigint not null,
  status text not null default 'open',
  ledger_transaction_id uuid references ledger_transactions(id),
  reversal_transaction_id uuid references ledger_transactions(id),
  created_at timestamptz not null default now(),
  closed_at timestamptz
);

-- The developer revenue clawed back after a chargeback or refund of spent money, for review.
create table if not exists revenue_clawbacks (
  id uuid primary key default gen_random_uuid(),
  source_transaction_id uuid not null unique references ledger_transactions(id),
  source_kind text not null,
  user_wallet_id uuid not null references wallets(id),
  developer_id uuid not null references developers(id),
  developer_wallet_id uuid not null references wallets(id),
  spent_usd numeric(20, 8) not null,
  developer_revenue_basis_usd numeric(20, 8) not null,
  retail_basis_usd numeric(20, 8) not null,
  amount numeric(20, 8) not null,
  status text not null default 'booked',
  ledger_transaction_id uuid not null references ledger_transactions(id),
  reversal_transaction_id uuid references ledger_transactions(id),
  reversal_note text,
  created_at timestamptz not null default now(),
  reversed_at timestamptz,
  constraint revenue_clawbacks_positive check (amount > 0)
);
create index if not exists revenue_clawbacks_created on revenue_clawbacks (created_at);

alter table payouts add column if not exists closed_at timestamptz;

-- faucet_post_receivable_debit: migrations/functions/faucet_post_receivable_debit.sql

-- A paid checkout session credits its wallet once (as in 0003) and now also records the payment
-- intent it was paid with, on every delivery that names one, so later refunds and disputes find it.
drop function if exists faucet_complete_checkout(text, text, text, bigint, text, text);
-- faucet_complete_checkout: migrations/functions/faucet_complete_checkout.sql

-- faucet_book_stripe_reversal: migrations/functions/faucet_book_stripe_reversal.sql

-- faucet_book_clawback: migrations/functions/faucet_book_clawback.sql

-- faucet_reverse_clawback: migrations/functions/faucet_reverse_clawback.sql

-- faucet_close_payout: migrations/functions/faucet_close_payout.sql
