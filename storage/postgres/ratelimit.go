package postgres

import (
	"context"
	"fmt"
	"time"
)

// RateLimitStore keeps the rate limits every api process shares, on the
// rate_limit_windows table (migration 0840): per key, limit period and
// fixed window of that period, the permits processes have leased. It is
// the store of internal/ratelimit, which leases permits in batches and
// spends them in memory. Windows are the database's clock, the one every
// process shares.
type RateLimitStore struct{ db *DB }

// NewRateLimitStore returns the shared rate limit store on db.
func NewRateLimitStore(db *DB) *RateLimitStore {
	if db == nil {
		panic("postgres: NewRateLimitStore needs a DB")
	}
	return &RateLimitStore{db: db}
}

// reserveRateSQL leases up to $4 permits of key $1 under a limit of $3 per
// period of $2 ms, in one statement. The limit is a sliding-window
// counter: the current fixed window's count plus the previous one's,
// weighted by how much of it the sliding window still covers, stays at
// most the limit. The row's lock (ON CONFLICT DO UPDATE reads the latest
// count) serializes the leases of one window, so their sum never passes
// what the estimate allows. granted is the lease's size, possibly 0.
const reserveRateSQL = `
WITH clock AS (
    SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms
), win AS (
    SELECT now_ms, now_ms - now_ms % $2 AS start FROM clock
), est AS (
    SELECT win.now_ms, win.start,
        floor($3 - coalesce((SELECT p.used FROM rate_limit_windows p
                WHERE p.key = $1 AND p.period_ms = $2 AND p.window_start = win.start - $2), 0)
            * (1 - (win.now_ms - win.start)::float8 / $2))::int AS cap
    FROM win
)
INSERT INTO rate_limit_windows AS r (key, period_ms, window_start, used, granted, expires_at)
SELECT $1, $2, est.start, greatest(0, least($4, est.cap)), greatest(0, least($4, est.cap)),
    to_timestamp((est.start + 2 * $2) / 1000.0)
FROM est
ON CONFLICT (key, period_ms, window_start) DO UPDATE
SET used = r.used + greatest(0, least($4, (SELECT cap FROM est) - r.used)),
    granted = greatest(0, least($4, (SELECT cap FROM est) - r.used))
RETURNING r.granted, r.window_start + r.period_ms - (SELECT now_ms FROM est)`

// ReserveRate leases up to want permits of key under limit per period and
// returns how many it granted (0 when the window is full) and how long
// the current window lasts: granted permits are good until then. A
// period is counted in whole milliseconds. Errors carry dbErr's codes
// (EUNAVAILABLE while the database is away).
func (s *RateLimitStore) ReserveRate(ctx context.Context, key string, limit int, period time.Duration, want int) (granted int, resetIn time.Duration, err error) {
	ms := period.Milliseconds()
	if ms <= 0 || limit <= 0 || want <= 0 {
		return 0, 0, fmt.Errorf("reserve rate %q: limit %d per %s, want %d", key, limit, period, want)
	}
	var left int64
	if err := s.db.Pool.QueryRow(ctx, reserveRateSQL, key, ms, limit, want).Scan(&granted, &left); err != nil {
		return 0, 0, fmt.Errorf("reserve rate: %w", dbErr(err))
	}
	return granted, time.Duration(left) * time.Millisecond, nil
}

// SweepRateWindows deletes the windows that no longer weigh on any
// estimate (two periods after their start) and returns how many.
func (s *RateLimitStore) SweepRateWindows(ctx context.Context) (int64, error) {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM rate_limit_windows WHERE expires_at < now()`)
	if err != nil {
		return 0, fmt.Errorf("sweep rate windows: %w", dbErr(err))
	}
	return tag.RowsAffected(), nil
}
