-- The request log's reads (docs/request-log.md), measured over a million calls (npm run bench -- calls).
--
-- `outcome=estimated` probes each candidate call's booking for `estimated`: this small index
-- (estimated bookings only) answers the probe without reading the table.
create index if not exists usage_events_estimated_request on usage_events (request_id) where estimated;

-- The time index served only the retention delete, which now goes app by app through
-- (app_id, created_at, id). Left in place, the planner walked it for a developer's page across their
-- apps, reading every other developer's newer calls first (a small developer's page: up to 1.6 s).
drop index if exists gateway_call_log_created;
