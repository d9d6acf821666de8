-- The current definition of faucet_lock_live_developer_keys (migrations/README.md: edit it here; the runner re-applies a changed file).
-- The live keys of a developer, counted after their developer row is locked (`for no key update`, the
-- lock the live-key cap of faucet_cap_live_rows takes too). The count is a statement of its own, so it
-- sees a revocation or creation a concurrent statement committed while this one waited for the lock.
-- revokeDeveloperKey (workers/shared/developers/revoke-developer-key.ts) asks it in its update's
-- condition: two revocations of a developer's last two live keys run one after the other, and the
-- second finds one live key and keeps it (409 invalid_state), where the statement's own snapshot would
-- still have counted two. The lock is held to the end of the caller's transaction.
create or replace function faucet_lock_live_developer_keys(p_developer_id uuid) returns integer
language plpgsql as $$
begin
  perform 1 from developers where id = p_developer_id for no key update;
  return (select count(*) from developer_keys where developer_id = p_developer_id and revoked_at is null);
end
$$;
