-- Money keys the server owns (DESIGN §5). A gateway call's hold, booking and budget reservation are
-- keyed by `call:<uuid>`, a key the gateway generates for that call alone; a local usage report's
-- booking by `local:<end user>:<report id>`. The client's x-request-id is a correlation id, and
-- (scoped to its end user) the idempotency key of a gateway call: `gateway_calls` claims it while
-- the call is in flight or billed, and gives it back when the call is abandoned unbilled.
--
-- `gateway_calls` is also the durable record of calls in flight: a call the gateway could not
-- settle (its isolate ended before the booking) is booked by the API's cron at its bound once its
-- deadline and a grace period have passed.

create table if not exists gateway_calls (
  id uuid primary key,
  money_key text not null unique,
  client_request_id text not null,
  -- SHA-256 of the request as sent (body and requested route), to tell a retry from a reuse.
  fingerprint text not null,
  app_id uuid not null references apps(id),
  end_user_id uuid not null references end_users(id),
  feature_key text not null,
  -- The route chosen in the authorize statement; null when none could be (the call is refused).
  route_mode text,
  provider text not null,
  model text not null,
  provider_credential_id uuid references provider_credentials(id),
  -- The most tokens the call can be billed for (the hold's worst case): what the sweeper books.
  bound_input_tokens integer not null check (bound_input_tokens >= 0),
  bound_output_tokens integer not null check (bound_output_tokens >= 0),
  status text not null default 'in_flight',
  deadline_at timestamptz not null,
  created_at timestamptz not null default now(),
  closed_at timestamptz,
  constraint gateway_calls_status check (status in ('in_flight', 'settled', 'abandoned'))
);
create unique index if not exists gateway_calls_idempotency
  on gateway_calls (end_user_id, client_request_id) where status <> 'abandoned';
create index if not exists gateway_calls_in_flight on gateway_calls (deadline_at) where status = 'in_flight';

alter table usage_events add column if not exists client_request_id text;
alter table usage_events add column if not exists call_id uuid references gateway_calls(id);
-- What the user could not cover when the booking was written anyway (a receivable; DESIGN §5).
alter table usage_events add column if not exists receivable_usd numeric(20, 8) not null default 0;
create unique index if not exists usage_events_call on usage_events (call_id) where call_id is not null;
create index if not exists usage_events_client_request on usage_events (end_user_id, client_request_id);

-- A user wallet may go below zero only through a booking that must not be dropped (a call whose
-- cost outgrew its hold, a chargeback): the negative balance is a receivable from the user, and
-- every debit path that can refuse (holds, bookings with allow_receivable false, transactions) still
-- refuses to go below zero. Other wallets keep the hard floor.
alter table wallets drop constraint if exists wallets_non_negative;
do $$ begin
  alter table wallets add constraint wallets_non_negative_unless_receivable check (allow_negative or kind = 'user' or balance >= 0);
exception when duplicate_object then null;
end $$;

-- faucet_abandon_call: migrations/functions/faucet_abandon_call.sql

drop function if exists faucet_book_usage(text, uuid, uuid, text, text, text, text, integer, integer, integer, boolean,
  numeric, numeric, numeric, numeric, numeric, uuid, jsonb);

-- faucet_book_usage: migrations/functions/faucet_book_usage.sql
