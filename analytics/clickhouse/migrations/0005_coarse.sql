-- Coarse count rollups: the counting columns of 0003's hourly tables (no
-- quantile states: percentiles come from pct) per six hours and per day
-- (grain, in seconds; the column named minute holds the bucket's start).
-- A month read by six hours is 120 rows per key, not 720 hourly ones
-- spread over 31 day partitions, so reports whose buckets are six hours
-- or days read these for the whole grains of their window, the hourly
-- tables for the whole hours beside them and the per-minute ones for the
-- edges. Month partitions (retention drops a month once wholly before the
-- cutoff, as for pct) and granules of 256 rows: the tables are small.
--
-- One view per table feeds both grains (ARRAY JOIN of the grains, as
-- pct_mv does): a view fed by another view's table does not fire on
-- 18.16, so the views read events.
CREATE TABLE IF NOT EXISTS {db}.steps_coarse (
    grain UInt32,
    step_type String,
    minute DateTime,
    pipeline String,
    status String,
    error_class String,
    n AggregateFunction(count),
    bytes_in AggregateFunction(sum, Int64),
    bytes_out AggregateFunction(sum, Int64),
    sample AggregateFunction(argMax, Int64, DateTime),
    last AggregateFunction(max, DateTime)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMM(minute) ORDER BY (grain, step_type, minute, pipeline, status, error_class)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.steps_coarse_mv TO {db}.steps_coarse AS
SELECT grain, step_type, toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute, pipeline, status, error_class, countState() AS n, sumState(bytes_in) AS bytes_in, sumState(bytes) AS bytes_out, argMaxState(file_id, ts) AS sample, maxState(ts) AS last
FROM {db}.events ARRAY JOIN [21600, 86400] AS grain WHERE kind = 'step'
GROUP BY grain, step_type, minute, pipeline, status, error_class;

CREATE TABLE IF NOT EXISTS {db}.documents_coarse (
    grain UInt32,
    minute DateTime,
    pipeline String,
    status String,
    n AggregateFunction(count)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMM(minute) ORDER BY (grain, minute, pipeline, status)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.documents_coarse_mv TO {db}.documents_coarse AS
SELECT grain, toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute, pipeline, status, countState() AS n
FROM {db}.events ARRAY JOIN [21600, 86400] AS grain WHERE kind = 'document'
GROUP BY grain, minute, pipeline, status;

CREATE TABLE IF NOT EXISTS {db}.intake_coarse (
    grain UInt32,
    channel String,
    type String,
    minute DateTime,
    status String,
    n AggregateFunction(count),
    bytes AggregateFunction(sum, Int64)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMM(minute) ORDER BY (grain, channel, type, minute, status)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.intake_coarse_mv TO {db}.intake_coarse AS
SELECT grain, channel, type, toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute, status, countState() AS n, sumState(bytes) AS bytes
FROM {db}.events ARRAY JOIN [21600, 86400] AS grain WHERE kind = 'intake'
GROUP BY grain, channel, type, minute, status;

CREATE TABLE IF NOT EXISTS {db}.requests_coarse (
    grain UInt32,
    route String,
    method String,
    minute DateTime,
    http_status Int32,
    n AggregateFunction(count)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMM(minute) ORDER BY (grain, route, method, minute, http_status)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.requests_coarse_mv TO {db}.requests_coarse AS
SELECT grain, route, method, toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute, http_status, countState() AS n
FROM {db}.events ARRAY JOIN [21600, 86400] AS grain WHERE kind = 'request'
GROUP BY grain, route, method, minute, http_status;

CREATE TABLE IF NOT EXISTS {db}.integrations_coarse (
    grain UInt32,
    kind String,
    type String,
    direction String,
    minute DateTime,
    status String,
    n AggregateFunction(count),
    bytes AggregateFunction(sum, Int64)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMM(minute) ORDER BY (grain, kind, type, direction, minute, status)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.integrations_coarse_mv TO {db}.integrations_coarse AS
SELECT grain, kind, type, direction, toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute, status, countState() AS n, sumState(bytes) AS bytes
FROM {db}.events ARRAY JOIN [21600, 86400] AS grain WHERE kind IN ('integration', 'delivery')
GROUP BY grain, kind, type, direction, minute, status;

CREATE TABLE IF NOT EXISTS {db}.lag_coarse (
    grain UInt32,
    topic String,
    topic_partition Int32,
    minute DateTime,
    peak AggregateFunction(max, Int64),
    last AggregateFunction(argMax, Int64, DateTime),
    at AggregateFunction(max, DateTime)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMM(minute) ORDER BY (grain, topic, topic_partition, minute)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.lag_coarse_mv TO {db}.lag_coarse AS
SELECT grain, topic, topic_partition, toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute, maxState(lag) AS peak, argMaxState(lag, ts) AS last, maxState(ts) AS at
FROM {db}.events ARRAY JOIN [21600, 86400] AS grain WHERE kind = 'lag'
GROUP BY grain, topic, topic_partition, minute;

CREATE TABLE IF NOT EXISTS {db}.process_coarse (
    grain UInt32,
    process String,
    worker String,
    minute DateTime,
    cpu AggregateFunction(argMax, Float64, DateTime),
    rss AggregateFunction(argMax, Int64, DateTime),
    goroutines AggregateFunction(argMax, Int64, DateTime),
    dropped AggregateFunction(argMax, Int64, DateTime),
    at AggregateFunction(max, DateTime)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMM(minute) ORDER BY (grain, process, worker, minute)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.process_coarse_mv TO {db}.process_coarse AS
SELECT grain, process, worker, toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute, argMaxState(cpu, ts) AS cpu, argMaxState(rss, ts) AS rss, argMaxState(goroutines, ts) AS goroutines, argMaxState(dropped, ts) AS dropped, maxState(ts) AS at
FROM {db}.events ARRAY JOIN [21600, 86400] AS grain WHERE kind = 'process'
GROUP BY grain, process, worker, minute;

-- Backfill from the hourly rollups (the minutes of the current hour from
-- the per-minute ones), recorded before the views existed. As in 0004, rows
-- of the last minute before the upgrade may be left out (never counted
-- twice).
INSERT INTO {db}.steps_coarse (grain, step_type, minute, pipeline, status, error_class, n, bytes_in, bytes_out, sample, last)
SELECT grain, step_type, toDateTime(intDiv(toUInt32(m), grain) * grain) AS minute, pipeline, status, error_class, countMergeState(s_n) AS n, sumMergeState(s_bytes_in) AS bytes_in, sumMergeState(s_bytes_out) AS bytes_out, argMaxMergeState(s_sample) AS sample, maxMergeState(s_last) AS last
FROM (SELECT step_type, pipeline, status, error_class, minute AS m, n AS s_n, bytes_in AS s_bytes_in, bytes_out AS s_bytes_out, sample AS s_sample, last AS s_last FROM {db}.steps_1h WHERE minute < toStartOfHour(now() - 60)
      UNION ALL SELECT step_type, pipeline, status, error_class, minute AS m, n AS s_n, bytes_in AS s_bytes_in, bytes_out AS s_bytes_out, sample AS s_sample, last AS s_last FROM {db}.steps_1m WHERE minute >= toStartOfHour(now() - 60) AND minute < toStartOfMinute(now() - 60))
ARRAY JOIN [21600, 86400] AS grain
GROUP BY grain, step_type, minute, pipeline, status, error_class;

INSERT INTO {db}.documents_coarse (grain, minute, pipeline, status, n)
SELECT grain, toDateTime(intDiv(toUInt32(m), grain) * grain) AS minute, pipeline, status, countMergeState(s_n) AS n
FROM (SELECT pipeline, status, minute AS m, n AS s_n FROM {db}.documents_1h WHERE minute < toStartOfHour(now() - 60)
      UNION ALL SELECT pipeline, status, minute AS m, n AS s_n FROM {db}.documents_1m WHERE minute >= toStartOfHour(now() - 60) AND minute < toStartOfMinute(now() - 60))
ARRAY JOIN [21600, 86400] AS grain
GROUP BY grain, minute, pipeline, status;

INSERT INTO {db}.intake_coarse (grain, channel, type, minute, status, n, bytes)
SELECT grain, channel, type, toDateTime(intDiv(toUInt32(m), grain) * grain) AS minute, status, countMergeState(s_n) AS n, sumMergeState(s_bytes) AS bytes
FROM (SELECT channel, type, status, minute AS m, n AS s_n, bytes AS s_bytes FROM {db}.intake_1h WHERE minute < toStartOfHour(now() - 60)
      UNION ALL SELECT channel, type, status, minute AS m, n AS s_n, bytes AS s_bytes FROM {db}.intake_1m WHERE minute >= toStartOfHour(now() - 60) AND minute < toStartOfMinute(now() - 60))
ARRAY JOIN [21600, 86400] AS grain
GROUP BY grain, channel, type, minute, status;

INSERT INTO {db}.requests_coarse (grain, route, method, minute, http_status, n)
SELECT grain, route, method, toDateTime(intDiv(toUInt32(m), grain) * grain) AS minute, http_status, countMergeState(s_n) AS n
FROM (SELECT route, method, http_status, minute AS m, n AS s_n FROM {db}.requests_1h WHERE minute < toStartOfHour(now() - 60)
      UNION ALL SELECT route, method, http_status, minute AS m, n AS s_n FROM {db}.requests_1m WHERE minute >= toStartOfHour(now() - 60) AND minute < toStartOfMinute(now() - 60))
ARRAY JOIN [21600, 86400] AS grain
GROUP BY grain, route, method, minute, http_status;

INSERT INTO {db}.integrations_coarse (grain, kind, type, direction, minute, status, n, bytes)
SELECT grain, kind, type, direction, toDateTime(intDiv(toUInt32(m), grain) * grain) AS minute, status, countMergeState(s_n) AS n, sumMergeState(s_bytes) AS bytes
FROM (SELECT kind, type, direction, status, minute AS m, n AS s_n, bytes AS s_bytes FROM {db}.integrations_1h WHERE minute < toStartOfHour(now() - 60)
      UNION ALL SELECT kind, type, direction, status, minute AS m, n AS s_n, bytes AS s_bytes FROM {db}.integrations_1m WHERE minute >= toStartOfHour(now() - 60) AND minute < toStartOfMinute(now() - 60))
ARRAY JOIN [21600, 86400] AS grain
GROUP BY grain, kind, type, direction, minute, status;

INSERT INTO {db}.lag_coarse (grain, topic, topic_partition, minute, peak, last, at)
SELECT grain, topic, topic_partition, toDateTime(intDiv(toUInt32(m), grain) * grain) AS minute, maxMergeState(s_peak) AS peak, argMaxMergeState(s_last) AS last, maxMergeState(s_at) AS at
FROM (SELECT topic, topic_partition, minute AS m, peak AS s_peak, last AS s_last, at AS s_at FROM {db}.lag_1h WHERE minute < toStartOfHour(now() - 60)
      UNION ALL SELECT topic, topic_partition, minute AS m, peak AS s_peak, last AS s_last, at AS s_at FROM {db}.lag_1m WHERE minute >= toStartOfHour(now() - 60) AND minute < toStartOfMinute(now() - 60))
ARRAY JOIN [21600, 86400] AS grain
GROUP BY grain, topic, topic_partition, minute;

INSERT INTO {db}.process_coarse (grain, process, worker, minute, cpu, rss, goroutines, dropped, at)
SELECT grain, process, worker, toDateTime(intDiv(toUInt32(m), grain) * grain) AS minute, argMaxMergeState(s_cpu) AS cpu, argMaxMergeState(s_rss) AS rss, argMaxMergeState(s_goroutines) AS goroutines, argMaxMergeState(s_dropped) AS dropped, maxMergeState(s_at) AS at
FROM (SELECT process, worker, minute AS m, cpu AS s_cpu, rss AS s_rss, goroutines AS s_goroutines, dropped AS s_dropped, at AS s_at FROM {db}.process_1h WHERE minute < toStartOfHour(now() - 60)
      UNION ALL SELECT process, worker, minute AS m, cpu AS s_cpu, rss AS s_rss, goroutines AS s_goroutines, dropped AS s_dropped, at AS s_at FROM {db}.process_1m WHERE minute >= toStartOfHour(now() - 60) AND minute < toStartOfMinute(now() - 60))
ARRAY JOIN [21600, 86400] AS grain
GROUP BY grain, process, worker, minute
