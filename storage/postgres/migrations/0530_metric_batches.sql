-- The tokens of the metric batches the PostgreSQL recorder wrote
-- (analytics/postgres: WriteMetrics), kept a day: a batch retried after its
-- answer was lost finds its token taken and is not stored twice.
CREATE TABLE IF NOT EXISTS metric_batches (
    token TEXT PRIMARY KEY,
    written_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS metric_batches_written_at ON metric_batches (written_at);
