-- pct (0004) again, in granules of 8 rows rather than 64: pct2. A report
-- reads, per dimension (a step type, a route, …), the few 1-hour rows of
-- its window's edge hours beside the coarser grains' run of rows, and
-- every state of a read granule is decoded, used or not: with 64-row
-- granules the edge hours of /steps decoded over a thousand unused
-- states per percentile query (about a third of its work); with 8, about
-- a hundred. The marks are still few (pct2 holds a few hundred rows per
-- dimension and month). Same columns, order, view and answers as pct.
CREATE TABLE IF NOT EXISTS {db}.pct2 (
    grain  UInt32,
    metric String,
    d1     String,
    d2     String,
    d3     String,
    minute DateTime,
    h      AggregateFunction(quantilesExactWeighted(0.5, 0.95, 0.99), UInt8, UInt64)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMM(minute) ORDER BY (grain, metric, d1, d2, d3, minute)
SETTINGS index_granularity = 8;

-- The view moves to pct2 (pct is no longer fed; retention empties it by
-- the month). Rows recorded between the two statements may be left out
-- of the percentiles (never counted twice), as in 0004's backfill.
DROP TABLE IF EXISTS {db}.pct_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.pct2_mv TO {db}.pct2 AS
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

-- The states recorded so far, copied as they are (the same answers).
INSERT INTO {db}.pct2 (grain, metric, d1, d2, d3, minute, h)
SELECT grain, metric, d1, d2, d3, minute, h FROM {db}.pct
