-- The fallbacks a call was authorized with (issue 16, docs/models.md "Fallback and aliases").
-- A call's record names its first candidate's provider and model; when a fallback answered and the
-- gateway never settled the call (client gone, settlement lost), the stale-call sweeper
-- (workers/shared/calls/sweep-stale-calls.ts) cannot know which candidate answered. So
-- faucet_authorize_call records the feature's fallback list the hold was sized over, and the sweeper
-- books the call at the costliest candidate the route could have tried, never at a cheaper first
-- model. Null on calls authorized before this migration or by a gateway that does not fall back.
-- Idempotent.

alter table gateway_calls add column if not exists fallback_models jsonb;
