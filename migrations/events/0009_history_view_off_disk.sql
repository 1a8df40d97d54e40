-- delivery_history leaves the file. SQLite parses every view and index of
-- a file each time a connection opens it, and a node with more webhooks
-- than open files reopens one for nearly every event; of the schema's
-- objects the view cost the most to parse (~35 us of a ~190 us open).
-- `webhooker history-view` prints the same view as a TEMP VIEW for the
-- sqlite3 CLI, which makes it for its own connection only:
--   sqlite3 -cmd "$(webhooker history-view)" events-<uuid>.db 'select * from delivery_history'
-- No query of the daemon reads the view.
DROP VIEW IF EXISTS delivery_history;
