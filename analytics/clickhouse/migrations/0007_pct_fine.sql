-- Percentiles of long windows whose buckets are finer than an hour (a
-- "last three days" is 30-minute buckets, a day 10-minute ones; windows
-- up to six hours keep the per-minute states, tiers.go): pct2 gains
-- 5-minute and 30-minute grains (300 and 1800 s). Five minutes divide
-- every auto-chosen interval of five minutes or more (5, 10, 15, 30
-- minutes, and hours, whose edges they shorten to the few minutes read
-- from the raw rows); thirty minutes answer the 30-minute buckets of
-- windows of two to three days with a sixth of the states (merging the
-- states is the work: 12 rather than 40 ms for /steps' durations over
-- three days). Before them those windows merged the per-minute quantile
-- states of 0002 (a sample of up to 8,192 values each), hundreds of
-- milliseconds over three days; the same log-scale buckets as pct2's
-- other grains answer within 4.5 %, like every whole-hour window.
--
-- A view of its own, beside pct2_mv (left as it is: replacing it would
-- lose the rows recorded in between), feeding the same table: one row per
-- event and grain (twice as many for a step, its queue wait at the
-- negative grains).
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.pct2_fine_mv TO {db}.pct2 AS
SELECT toUInt32(abs(g)) AS grain,
       multiIf(g < 0, 'wait', kind = 'delivery', 'integration', kind) AS metric,
       multiIf(kind = 'step', step_type, kind = 'intake', channel, kind = 'request', method, kind IN ('integration', 'delivery'), kind, '') AS d1,
       multiIf(kind = 'intake', type, kind = 'request', route, kind IN ('integration', 'delivery'), type, '') AS d2,
       if(kind IN ('integration', 'delivery'), direction, '') AS d3,
       toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute,
       quantilesExactWeightedState(0.5, 0.95, 0.99)(toUInt8(least(255, floor(8 * log2(greatest(0, if(g < 0, queue_wait_ms, duration_ms)) + 1)))), toUInt64(1)) AS h
FROM {db}.events ARRAY JOIN if(kind = 'step', [300, 1800, -300, -1800], [300, 1800]) AS g
WHERE kind IN ('step', 'document', 'intake', 'request', 'integration', 'delivery')
GROUP BY grain, metric, d1, d2, d3, minute;

-- Backfill from the raw rows recorded before the view existed, as 0004's:
-- rows of the last minute before the upgrade may be left out (never
-- counted twice).
INSERT INTO {db}.pct2 (grain, metric, d1, d2, d3, minute, h)
SELECT toUInt32(abs(g)) AS grain,
       multiIf(g < 0, 'wait', kind = 'delivery', 'integration', kind) AS metric,
       multiIf(kind = 'step', step_type, kind = 'intake', channel, kind = 'request', method, kind IN ('integration', 'delivery'), kind, '') AS d1,
       multiIf(kind = 'intake', type, kind = 'request', route, kind IN ('integration', 'delivery'), type, '') AS d2,
       if(kind IN ('integration', 'delivery'), direction, '') AS d3,
       toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute,
       quantilesExactWeightedState(0.5, 0.95, 0.99)(toUInt8(least(255, floor(8 * log2(greatest(0, if(g < 0, queue_wait_ms, duration_ms)) + 1)))), toUInt64(1)) AS h
FROM {db}.events ARRAY JOIN if(kind = 'step', [300, 1800, -300, -1800], [300, 1800]) AS g
WHERE kind IN ('step', 'document', 'intake', 'request', 'integration', 'delivery') AND ts < now() - 60
GROUP BY grain, metric, d1, d2, d3, minute
