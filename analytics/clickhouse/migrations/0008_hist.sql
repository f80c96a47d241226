-- Duration histograms that the reports merge themselves: hist. pct2's
-- quantilesExactWeighted states answer a percentile only through the
-- server, which decodes every state it reads (15-20 µs each on a slow
-- machine: a 30-day /steps read some 2,400), and no function gives their
-- counts back. hist holds the same log-scale buckets as counts, one row
-- per bucket: b = floor(8 * log2(ms + 1)) (bucketOf in tiers.go) and how
-- many durations fell in it, per grain (a minute, 5 and 30 minutes, hour,
-- six hours, day, in seconds), metric, dimensions and bucket start (pct2's
-- columns, see 0004). The API process reads a bucket's histograms once, keeps
-- those of closed buckets (hist.go) and merges them itself, so that a
-- dashboard's moving window reads only what it has not seen.
--
-- A SummingMergeTree sums the rows of one key as it merges parts; a
-- reader sums what is not merged yet. Ordered by grain, metric and start
-- first: what a reader fetches is every dimension of a grain's starts, one
-- run of rows, read in granules of 256 rows (a unit is a few hundred: a
-- report's edges read a few granules of each part, not thousands of rows).
CREATE TABLE IF NOT EXISTS {db}.hist (
    grain  UInt32,
    metric String,
    minute DateTime,
    d1     String,
    d2     String,
    d3     String,
    b      UInt8,
    n      UInt64
) ENGINE = SummingMergeTree(n) PARTITION BY toYYYYMM(minute) ORDER BY (grain, metric, minute, d1, d2, d3, b)
SETTINGS index_granularity = 256;

-- One view for every grain (a view fed by another view's table does not
-- fire on 18.16), as pct2's: the ARRAY JOIN turns each row into one per
-- grain, and a step row into as many more for its queue wait (negative
-- grains). A count per group, no aggregate state: cheaper to write than
-- pct2's states.
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.hist_mv TO {db}.hist AS
SELECT toUInt32(abs(g)) AS grain,
       multiIf(g < 0, 'wait', kind = 'delivery', 'integration', kind) AS metric,
       toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute,
       multiIf(kind = 'step', step_type, kind = 'intake', channel, kind = 'request', method, kind IN ('integration', 'delivery'), kind, '') AS d1,
       multiIf(kind = 'intake', type, kind = 'request', route, kind IN ('integration', 'delivery'), type, '') AS d2,
       if(kind IN ('integration', 'delivery'), direction, '') AS d3,
       toUInt8(least(255, floor(8 * log2(greatest(0, if(g < 0, queue_wait_ms, duration_ms)) + 1)))) AS b,
       count() AS n
FROM {db}.events ARRAY JOIN if(kind = 'step', [60, 300, 1800, 3600, 21600, 86400, -60, -300, -1800, -3600, -21600, -86400], [60, 300, 1800, 3600, 21600, 86400]) AS g
WHERE kind IN ('step', 'document', 'intake', 'request', 'integration', 'delivery')
GROUP BY grain, metric, minute, d1, d2, d3, b;

-- pct2 is no longer read: its views and the tables go.
DROP TABLE IF EXISTS {db}.pct2_mv;

DROP TABLE IF EXISTS {db}.pct2_fine_mv;

DROP TABLE IF EXISTS {db}.pct2;

DROP TABLE IF EXISTS {db}.pct;

-- Backfill from the raw rows recorded before the view existed, as 0004's:
-- rows of the last minute before the upgrade may be left out.
INSERT INTO {db}.hist (grain, metric, minute, d1, d2, d3, b, n)
SELECT toUInt32(abs(g)) AS grain,
       multiIf(g < 0, 'wait', kind = 'delivery', 'integration', kind) AS metric,
       toDateTime(intDiv(toUInt32(ts), grain) * grain) AS minute,
       multiIf(kind = 'step', step_type, kind = 'intake', channel, kind = 'request', method, kind IN ('integration', 'delivery'), kind, '') AS d1,
       multiIf(kind = 'intake', type, kind = 'request', route, kind IN ('integration', 'delivery'), type, '') AS d2,
       if(kind IN ('integration', 'delivery'), direction, '') AS d3,
       toUInt8(least(255, floor(8 * log2(greatest(0, if(g < 0, queue_wait_ms, duration_ms)) + 1)))) AS b,
       count() AS n
FROM {db}.events ARRAY JOIN if(kind = 'step', [60, 300, 1800, 3600, 21600, 86400, -60, -300, -1800, -3600, -21600, -86400], [60, 300, 1800, 3600, 21600, 86400]) AS g
WHERE kind IN ('step', 'document', 'intake', 'request', 'integration', 'delivery') AND ts < now() - 60
GROUP BY grain, metric, minute, d1, d2, d3, b
