-- Wallet objects (issue 19, docs/edge.md): the name of an end user's wallet Durable Object — 32 hex
-- of an HMAC of the end user's id under SESSION_HASH_SECRET, the part of a session token that routes
-- a call to it — kept with the end user when a session is minted. The object's first statement then
-- reads the session and takes its lease at once, the lease only when the session's end user is the
-- one the object is named after (a token whose wallet part names another user's object takes none),
-- with no secret sent to the database. Idempotent.
alter table end_users add column if not exists wallet_object text;
create unique index if not exists end_users_wallet_object on end_users (wallet_object) where wallet_object is not null;
