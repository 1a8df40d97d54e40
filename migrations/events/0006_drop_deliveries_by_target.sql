-- deliveries_by_target goes: every delivery written and every change of
-- status updated it, and no query needs it. The sampler's and the stats'
-- counts per target and status read deliveries_by_status (status,
-- target_id) as a covering index; a target's waiting deliveries (refills,
-- FIFO heads) read deliveries_waiting_by_target. Checked with EXPLAIN
-- QUERY PLAN.
DROP INDEX deliveries_by_target;
