-- Webhook-scoped tokens and the audit log of admin API writes
-- (docs/security.md, *Access model*).

-- A token reaches one webhook with a scope (read < operate < manage). Only
-- its SHA-256 is kept; the plain token is shown once, when it is made.
-- A revoked token keeps its row (the audit log names it) and is refused.
CREATE TABLE access_tokens (
  id           TEXT PRIMARY KEY,
  webhook_id   TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  name         TEXT NOT NULL,
  scope        TEXT NOT NULL CHECK (scope IN ('read', 'operate', 'manage')),
  token_sha256 TEXT NOT NULL UNIQUE,
  created_at   TEXT NOT NULL,
  expires_at   TEXT,
  revoked_at   TEXT
);
CREATE INDEX access_tokens_by_webhook ON access_tokens(webhook_id);

-- One row per write through the admin API that reached its handler: who
-- (actor 'admin', 'token' or 'portal' with actor_id), what (method, route
-- pattern, the path's ids, the names of the body's fields, never their
-- values), when, and the answer's status. Kept as long as its webhook keeps
-- events (retention_days; 30 days for rows of no webhook).
CREATE TABLE audit_log (
  id         INTEGER PRIMARY KEY,
  at         TEXT NOT NULL,
  actor      TEXT NOT NULL CHECK (actor IN ('admin', 'token', 'portal')),
  actor_id   TEXT,
  webhook_id TEXT,
  method     TEXT NOT NULL,
  route      TEXT NOT NULL,
  ids        TEXT NOT NULL DEFAULT '[]',
  fields     TEXT NOT NULL DEFAULT '[]',
  status     INTEGER NOT NULL
);
CREATE INDEX audit_log_by_webhook ON audit_log(webhook_id, id);
CREATE INDEX audit_log_by_time ON audit_log(at);
