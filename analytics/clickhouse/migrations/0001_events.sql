-- Raw metric rows, one per event, partitioned by day so that retention can
-- drop whole days (the 18.16 server has no TTL). {db} is the database.
CREATE TABLE IF NOT EXISTS {db}.events (
{columns}
) ENGINE = MergeTree() PARTITION BY toYYYYMMDD(ts) ORDER BY (kind, ts);
