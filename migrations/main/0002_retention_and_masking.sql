-- Per-webhook retention cap and masking of stored bodies.
--   max_events:    events kept per webhook at most (oldest terminal ones go first)
--   mask_pointers: JSON array of JSON pointers ("/user/email") whose values are
--                  replaced with "[masked]" once every delivery of an event is final
ALTER TABLE webhooks ADD COLUMN max_events INTEGER NOT NULL DEFAULT 100000 CHECK (max_events > 0);
ALTER TABLE webhooks ADD COLUMN mask_pointers TEXT NOT NULL DEFAULT '[]';
