-- Redrive and masking.
--   deliveries.series_start: the attempt number a redrive started its new
--     attempt series after; the retry budget counts from there, the results
--     of earlier series stay in delivery_results.
--   events.masked: NULL until every delivery is final; then 1 when the body
--     was masked (or nothing needed masking), 0 when it could not be (not JSON).
ALTER TABLE deliveries ADD COLUMN series_start INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN masked INTEGER CHECK (masked IN (0, 1));
CREATE INDEX events_by_masked ON events(masked) WHERE masked IS NULL;
