-- Indexes for the queries that run on every pass (the sampler) or
-- every page (history), each checked with EXPLAIN QUERY PLAN.
--   The sampler counts waiting deliveries per target and status: the index
--     on (status, target_id) answers it without reading a table row.
--     (status, next_attempt_at) goes: no query filters or sorts on that time.
--   GET /deliveries pages newest first by (created_at, id).
DROP INDEX deliveries_by_status;
CREATE INDEX deliveries_by_status ON deliveries(status, target_id);
CREATE INDEX deliveries_by_created_at ON deliveries(created_at, id);
