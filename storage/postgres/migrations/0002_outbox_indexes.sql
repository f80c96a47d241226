-- The relay checks per-key order among unsent rows, and cleanup deletes old
-- sent rows: both need their own index once the outbox grows.
CREATE INDEX outbox_unsent_key ON outbox (topic, key, id) WHERE sent_at IS NULL;
CREATE INDEX outbox_sent ON outbox (sent_at) WHERE sent_at IS NOT NULL;
