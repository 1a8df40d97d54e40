-- Pull targets: a consumer leases waiting deliveries (POST .../lease).
--   lease_hash:   SHA-256 (hex) of the lease token that holds the delivery;
--                 the token itself is never stored.
--   leased_until: when that lease runs out; after it the delivery is
--                 offered again. Both NULL when nobody holds it.
-- A held delivery stays pending or retrying: the lease is not a status, so
-- a kill -9 leaves every unacknowledged delivery waiting on disk.
ALTER TABLE deliveries ADD COLUMN lease_hash TEXT;
ALTER TABLE deliveries ADD COLUMN leased_until TEXT;
CREATE INDEX deliveries_by_lease ON deliveries(lease_hash) WHERE lease_hash IS NOT NULL;
