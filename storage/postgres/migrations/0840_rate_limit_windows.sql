-- The rate limits every api process shares (storage/postgres/ratelimit.go,
-- internal/ratelimit): one row per limited key, limit period and fixed
-- window of that period (window_start in milliseconds since the epoch, a
-- multiple of period_ms). used counts the permits processes leased in the
-- window; granted is what the last lease statement handed out (how its
-- caller learns it). A window still weighs on the next one's sliding
-- estimate, so a row is kept until expires_at, two periods after its
-- start, then swept.
--
-- UNLOGGED: the counts are worth a few minutes at most; a crash of the
-- database server empties the table, which only restarts the windows,
-- and the statement that runs for every lease writes no WAL.
CREATE UNLOGGED TABLE rate_limit_windows (
    key          TEXT NOT NULL,
    period_ms    BIGINT NOT NULL CHECK (period_ms > 0),
    window_start BIGINT NOT NULL,
    used         INTEGER NOT NULL DEFAULT 0,
    granted      INTEGER NOT NULL DEFAULT 0,
    expires_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (key, period_ms, window_start)
) WITH (fillfactor = 70);

CREATE INDEX rate_limit_windows_expires ON rate_limit_windows (expires_at);
