-- Optional signature verification of inbound requests, per entrypoint.
--   verification:        none | standard (Standard Webhooks) | github | stripe
--   verification_secret: the sender's signing secret; never shown by the API
ALTER TABLE entrypoints ADD COLUMN verification TEXT NOT NULL DEFAULT 'none'
  CHECK (verification IN ('none', 'standard', 'github', 'stripe'));
ALTER TABLE entrypoints ADD COLUMN verification_secret TEXT;
