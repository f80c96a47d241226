-- Every analytics event in the one metrics table: step attempts gain their
-- pipeline, worker, queue wait and bytes in; documents, integrations,
-- deliveries, consumer lag and process samples get their columns. Zero
-- defaults, as in ClickHouse, so both stores answer the same queries.
ALTER TABLE metrics
    ADD COLUMN IF NOT EXISTS pipeline        TEXT NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS worker          TEXT NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS queue_wait_ms   DOUBLE PRECISION NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS bytes_in        BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS type            TEXT NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS direction       TEXT NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS target          TEXT NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS topic           TEXT NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS topic_partition INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS lag             BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS process         TEXT NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS cpu             DOUBLE PRECISION NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS rss             BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS goroutines      BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS dropped         BIGINT NOT NULL DEFAULT 0;
