-- A webhook moving to another node (`webhooker cluster move`): the node it
-- leaves keeps it until the move ends, takes no events for it and delivers
-- none. NULL: this node owns it.
ALTER TABLE webhooks ADD COLUMN moving_to TEXT;

CREATE TRIGGER placement_webhook_moving AFTER UPDATE OF moving_to ON webhooks
BEGIN UPDATE placement SET version = version + 1 WHERE id = 1; END;
