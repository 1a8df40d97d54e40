-- A FIFO target's next delivery is the oldest waiting one of that target:
-- read after every delivery, so it must not sort the whole backlog.
CREATE INDEX deliveries_waiting_by_target ON deliveries(target_id, created_at)
  WHERE status IN ('pending', 'retrying');
