-- Entrypoints get a name, unique within their webhook, so that the API and
-- the CLI can take it wherever they take the entrypoint's id. Existing rows:
-- a webhook's oldest entrypoint is "default", the others "ep-" and the first
-- 8 characters of their id (the whole id, should two of them share those).
ALTER TABLE entrypoints ADD COLUMN name TEXT NOT NULL DEFAULT '';

UPDATE entrypoints SET name = 'ep-' || substr(id, 1, 8);
UPDATE entrypoints SET name = 'default'
 WHERE id IN (SELECT id FROM entrypoints e
               WHERE NOT EXISTS (SELECT 1 FROM entrypoints o
                                  WHERE o.webhook_id = e.webhook_id
                                    AND (o.created_at < e.created_at
                                         OR (o.created_at = e.created_at AND o.id < e.id))));
UPDATE entrypoints SET name = 'ep-' || id
 WHERE name <> 'default'
   AND EXISTS (SELECT 1 FROM entrypoints o
                WHERE o.webhook_id = entrypoints.webhook_id AND o.id <> entrypoints.id
                  AND o.name <> 'default' AND substr(o.id, 1, 8) = substr(entrypoints.id, 1, 8));

CREATE UNIQUE INDEX entrypoints_by_name ON entrypoints(webhook_id, name);
