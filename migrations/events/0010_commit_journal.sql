-- The file's place in the node's commit journal (storage/commit_journal.h):
-- each commit the journal makes durable moves it by one in the same
-- transaction, so that replay after a power loss applies only what the
-- file lost.
CREATE TABLE journal_position (position INTEGER NOT NULL);
INSERT INTO journal_position (position) VALUES (0);
