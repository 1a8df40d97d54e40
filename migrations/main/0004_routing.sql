-- Routing (docs/decisions.md, *Routing*).
--   entrypoints.event_type_rule: how an event's type is found, as the API
--     takes it ({"header": ...}, {"json_pointer": ...} or {"jq": ...});
--     NULL: the default (X-GitHub-Event, then the JSON body's /type).
--   targets.routing: the target's subscription, transformation and rate
--     limit as the API takes them ({"filter", "transform", "rate_limit"},
--     each optional); checked (and its programs compiled) when written.
ALTER TABLE entrypoints ADD COLUMN event_type_rule TEXT;
ALTER TABLE targets ADD COLUMN routing TEXT NOT NULL DEFAULT '{}';
