-- Portal links (docs/security.md, *Portal links*): a short-lived, single-use
-- link that opens the console limited to one webhook. Only the SHA-256 of
-- the link's secret and of the session it is exchanged for are kept.
CREATE TABLE portal_links (
  id                 TEXT PRIMARY KEY,
  webhook_id         TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  scope              TEXT NOT NULL CHECK (scope IN ('read', 'operate', 'manage')),
  secret_sha256      TEXT NOT NULL UNIQUE,
  created_at         TEXT NOT NULL,
  expires_at         TEXT NOT NULL,
  used_at            TEXT,
  session_sha256     TEXT UNIQUE,
  session_expires_at TEXT
);
CREATE INDEX portal_links_by_webhook ON portal_links(webhook_id);
