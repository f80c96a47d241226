-- Hourly rollups, the same tables as 0002's per hour (the column named
-- minute holds the hour's start), fed by their own materialized views over
-- events. Reports whose buckets are whole hours read them for the whole
-- hours of their window and the per-minute tables for the edges.
CREATE TABLE IF NOT EXISTS {db}.steps_1h (
    step_type   String,
    minute      DateTime,
    pipeline    String,
    status      String,
    error_class String,
    n           AggregateFunction(count),
    dur         AggregateFunction(quantiles(0.5, 0.95, 0.99), Float64),
    wait        AggregateFunction(quantiles(0.5, 0.95, 0.99), Float64),
    bytes_in    AggregateFunction(sum, Int64),
    bytes_out   AggregateFunction(sum, Int64),
    sample      AggregateFunction(argMax, Int64, DateTime),
    last        AggregateFunction(max, DateTime)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMMDD(minute) ORDER BY (step_type, minute, pipeline, status, error_class);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.steps_1h_mv TO {db}.steps_1h AS
SELECT step_type, toStartOfHour(ts) AS minute, pipeline, status, error_class,
       countState() AS n,
       quantilesState(0.5, 0.95, 0.99)(duration_ms) AS dur,
       quantilesState(0.5, 0.95, 0.99)(queue_wait_ms) AS wait,
       sumState(bytes_in) AS bytes_in,
       sumState(bytes) AS bytes_out,
       argMaxState(file_id, ts) AS sample,
       maxState(ts) AS last
FROM {db}.events WHERE kind = 'step'
GROUP BY step_type, minute, pipeline, status, error_class;

CREATE TABLE IF NOT EXISTS {db}.documents_1h (
    minute   DateTime,
    pipeline String,
    status   String,
    n        AggregateFunction(count),
    dur      AggregateFunction(quantiles(0.5, 0.95, 0.99), Float64)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMMDD(minute) ORDER BY (minute, pipeline, status);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.documents_1h_mv TO {db}.documents_1h AS
SELECT toStartOfHour(ts) AS minute, pipeline, status,
       countState() AS n,
       quantilesState(0.5, 0.95, 0.99)(duration_ms) AS dur
FROM {db}.events WHERE kind = 'document'
GROUP BY minute, pipeline, status;

CREATE TABLE IF NOT EXISTS {db}.intake_1h (
    channel String,
    type    String,
    minute  DateTime,
    status  String,
    n       AggregateFunction(count),
    bytes   AggregateFunction(sum, Int64),
    dur     AggregateFunction(quantiles(0.5, 0.95, 0.99), Float64)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMMDD(minute) ORDER BY (channel, type, minute, status);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.intake_1h_mv TO {db}.intake_1h AS
SELECT channel, type, toStartOfHour(ts) AS minute, status,
       countState() AS n,
       sumState(bytes) AS bytes,
       quantilesState(0.5, 0.95, 0.99)(duration_ms) AS dur
FROM {db}.events WHERE kind = 'intake'
GROUP BY channel, type, minute, status;

CREATE TABLE IF NOT EXISTS {db}.requests_1h (
    route       String,
    method      String,
    minute      DateTime,
    http_status Int32,
    n           AggregateFunction(count),
    dur         AggregateFunction(quantiles(0.5, 0.95, 0.99), Float64)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMMDD(minute) ORDER BY (route, method, minute, http_status);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.requests_1h_mv TO {db}.requests_1h AS
SELECT route, method, toStartOfHour(ts) AS minute, http_status,
       countState() AS n,
       quantilesState(0.5, 0.95, 0.99)(duration_ms) AS dur
FROM {db}.events WHERE kind = 'request'
GROUP BY route, method, minute, http_status;

CREATE TABLE IF NOT EXISTS {db}.integrations_1h (
    kind      String,
    type      String,
    direction String,
    minute    DateTime,
    status    String,
    n         AggregateFunction(count),
    bytes     AggregateFunction(sum, Int64),
    dur       AggregateFunction(quantiles(0.5, 0.95, 0.99), Float64)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMMDD(minute) ORDER BY (kind, type, direction, minute, status);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.integrations_1h_mv TO {db}.integrations_1h AS
SELECT kind, type, direction, toStartOfHour(ts) AS minute, status,
       countState() AS n,
       sumState(bytes) AS bytes,
       quantilesState(0.5, 0.95, 0.99)(duration_ms) AS dur
FROM {db}.events WHERE kind IN ('integration', 'delivery')
GROUP BY kind, type, direction, minute, status;

CREATE TABLE IF NOT EXISTS {db}.lag_1h (
    topic           String,
    topic_partition Int32,
    minute          DateTime,
    peak            AggregateFunction(max, Int64),
    last            AggregateFunction(argMax, Int64, DateTime),
    at              AggregateFunction(max, DateTime)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMMDD(minute) ORDER BY (topic, topic_partition, minute);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.lag_1h_mv TO {db}.lag_1h AS
SELECT topic, topic_partition, toStartOfHour(ts) AS minute,
       maxState(lag) AS peak,
       argMaxState(lag, ts) AS last,
       maxState(ts) AS at
FROM {db}.events WHERE kind = 'lag'
GROUP BY topic, topic_partition, minute;

CREATE TABLE IF NOT EXISTS {db}.process_1h (
    process    String,
    worker     String,
    minute     DateTime,
    cpu        AggregateFunction(argMax, Float64, DateTime),
    rss        AggregateFunction(argMax, Int64, DateTime),
    goroutines AggregateFunction(argMax, Int64, DateTime),
    dropped    AggregateFunction(argMax, Int64, DateTime),
    at         AggregateFunction(max, DateTime)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMMDD(minute) ORDER BY (process, worker, minute);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.process_1h_mv TO {db}.process_1h AS
SELECT process, worker, toStartOfHour(ts) AS minute,
       argMaxState(cpu, ts) AS cpu,
       argMaxState(rss, ts) AS rss,
       argMaxState(goroutines, ts) AS goroutines,
       argMaxState(dropped, ts) AS dropped,
       maxState(ts) AS at
FROM {db}.events WHERE kind = 'process'
GROUP BY process, worker, minute;
