-- Percentile rollups for windows of whole hours. The quantile states of
-- 0002/0003 keep a sample of up to 8,192 values each, so merging a month
-- of them reads about as much as the raw rows; pct keeps, per UTC hour,
-- six hours and day (grain, in seconds), how many values fell in each
-- log-scale bucket of a duration: b = floor(8 * log2(ms + 1)), eight
-- buckets per doubling, so a bucket's middle is within 4.5 % of every
-- value in it. A state holds at most one entry per bucket (about a hundred
-- over a real distribution), whatever the row count. Reports read the
-- bucket at each percentile (nearest rank) as milliseconds, from the
-- coarsest grain that divides their buckets (so a month by 6 h reads 120
-- states per series, not 720).
--
-- metric names what was measured and d1..d3 its dimensions:
--   step        duration by step_type (d1)
--   wait        queue wait by step_type (d1)
--   document    end-to-end duration
--   intake      duration by channel (d1) and type (d2)
--   request     duration by method (d1) and route (d2)
--   integration duration by kind (d1: integration or delivery), type (d2),
--               direction (d3)
-- The column named minute holds the start of the hour (six hours, day).
-- Month partitions and granules of 64 rows: a report reads the few rows
-- of its grain and metric, not whole granules of the others' states (each
-- read state is decoded, used or not).
CREATE TABLE IF NOT EXISTS {db}.pct (
    grain  UInt32,
    metric String,
    d1     String,
    d2     String,
    d3     String,
    minute DateTime,
    h      AggregateFunction(quantilesExactWeighted(0.5, 0.95, 0.99), UInt8, UInt64)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMM(minute) ORDER BY (grain, metric, d1, d2, d3, minute)
SETTINGS index_granularity = 64;

-- One view for every grain and kind (a view fed by another view's table
-- does not fire on 18.16): the ARRAY JOIN turns each row into one per
-- grain, and a step row into as many more for its queue wait (negative
-- grains).
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.pct_mv TO {db}.pct AS
SELECT toUInt32(abs(g)) AS grain,
       multiIf(g < 0, 'wait', kind = 'delivery', 'integration', kind) AS metric,
       multiIf(kind = 'step', step_type, kind = 'intake', channel, kind = 'request', method, kind IN ('integration', 'delivery'), kind, '') AS d1,
       multiIf(kind = 'intake', type, kind = 'request', route, kind IN ('integration', 'delivery'), type, '') AS d2,
       if(kind IN ('integration', 'delivery'), direction, '') AS d3,
       toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute,
       quantilesExactWeightedState(0.5, 0.95, 0.99)(toUInt8(least(255, floor(8 * log2(greatest(0, if(g < 0, queue_wait_ms, duration_ms)) + 1)))), toUInt64(1)) AS h
FROM {db}.events ARRAY JOIN if(kind = 'step', [3600, 21600, 86400, -3600, -21600, -86400], [3600, 21600, 86400]) AS g
WHERE kind IN ('step', 'document', 'intake', 'request', 'integration', 'delivery')
GROUP BY grain, metric, d1, d2, d3, minute;

-- Backfill from the raw rows recorded before the view existed. Rows of the
-- last minute before the upgrade may be left out (never counted twice):
-- they only feed percentiles over whole hours.
INSERT INTO {db}.pct (grain, metric, d1, d2, d3, minute, h)
SELECT toUInt32(abs(g)) AS grain,
       multiIf(g < 0, 'wait', kind = 'delivery', 'integration', kind) AS metric,
       multiIf(kind = 'step', step_type, kind = 'intake', channel, kind = 'request', method, kind IN ('integration', 'delivery'), kind, '') AS d1,
       multiIf(kind = 'intake', type, kind = 'request', route, kind IN ('integration', 'delivery'), type, '') AS d2,
       if(kind IN ('integration', 'delivery'), direction, '') AS d3,
       toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute,
       quantilesExactWeightedState(0.5, 0.95, 0.99)(toUInt8(least(255, floor(8 * log2(greatest(0, if(g < 0, queue_wait_ms, duration_ms)) + 1)))), toUInt64(1)) AS h
FROM {db}.events ARRAY JOIN if(kind = 'step', [3600, 21600, 86400, -3600, -21600, -86400], [3600, 21600, 86400]) AS g
WHERE kind IN ('step', 'document', 'intake', 'request', 'integration', 'delivery') AND ts < now() - 60
GROUP BY grain, metric, d1, d2, d3, minute
