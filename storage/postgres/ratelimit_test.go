package postgres

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"
)

// TestReserveRateGrantsUpToTheLimit: leases are granted until the window's
// count reaches the limit, the last one cut to what is left, then none;
// another key and another period have budgets of their own.
func TestReserveRateGrantsUpToTheLimit(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	s := NewRateLimitStore(db)
	ctx := context.Background()
	day := 24 * time.Hour
	var got []int
	for range 5 {
		g, left, err := s.ReserveRate(ctx, "k", 10, day, 3)
		if err != nil {
			t.Fatal(err)
		}
		if left <= 0 || left > day {
			t.Fatalf("window lasts %s more, want within a day", left)
		}
		got = append(got, g)
	}
	// Unless the day turned over mid-test (its first window then weighs).
	if got[0] != 3 || got[1] != 3 || got[2] != 3 || got[3] != 1 || got[4] != 0 {
		t.Fatalf("grants %v, want [3 3 3 1 0]", got)
	}
	if g, _, err := s.ReserveRate(ctx, "other", 10, day, 3); err != nil || g != 3 {
		t.Fatalf("another key: %d %v", g, err)
	}
	if g, _, err := s.ReserveRate(ctx, "k", 10, time.Hour, 3); err != nil || g != 3 {
		t.Fatalf("another period: %d %v", g, err)
	}
	// A lower limit grants nothing over what is used.
	if g, _, err := s.ReserveRate(ctx, "k", 5, day, 3); err != nil || g != 0 {
		t.Fatalf("lowered limit: %d %v", g, err)
	}
}

// TestReserveRateWeighsThePreviousWindow: the sliding estimate counts the
// previous window's leases weighted by the part of it the sliding window
// still covers: a full previous day leaves the fraction of today elapsed.
func TestReserveRateWeighsThePreviousWindow(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	s := NewRateLimitStore(db)
	ctx := context.Background()
	const dayMS = 86_400_000
	var nowMS int64
	if err := db.Pool.QueryRow(ctx, `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint`).Scan(&nowMS); err != nil {
		t.Fatal(err)
	}
	start := nowMS - nowMS%dayMS
	if _, err := db.Pool.Exec(ctx, `INSERT INTO rate_limit_windows (key, period_ms, window_start, used, expires_at)
		VALUES ('w', $1, $2, 1000, now() + interval '1 day')`, dayMS, start-dayMS); err != nil {
		t.Fatal(err)
	}
	g, _, err := s.ReserveRate(ctx, "w", 1000, 24*time.Hour, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := math.Floor(1000 * float64(nowMS-start) / dayMS)
	if math.Abs(float64(g)-want) > 1 {
		t.Fatalf("granted %d after a full previous day, want about %v (the fraction of today elapsed)", g, want)
	}
}

// TestReserveRateConcurrentLeasesKeepTheLimit: many connections leasing
// at once are granted the limit in total, never more.
func TestReserveRateConcurrentLeasesKeepTheLimit(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	s := NewRateLimitStore(db)
	var total int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				g, _, err := s.ReserveRate(context.Background(), "burst", 100, 24*time.Hour, 3)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += g
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if total != 100 {
		t.Fatalf("granted %d in total to concurrent leases, want the limit, 100", total)
	}
}

// TestSweepRateWindows deletes the windows past their expiry only.
func TestSweepRateWindows(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	s := NewRateLimitStore(db)
	ctx := context.Background()
	if _, _, err := s.ReserveRate(ctx, "live", 5, time.Hour, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO rate_limit_windows (key, period_ms, window_start, used, expires_at)
		VALUES ('old', 1000, 0, 3, now() - interval '1 second')`); err != nil {
		t.Fatal(err)
	}
	n, err := s.SweepRateWindows(ctx)
	if err != nil || n != 1 {
		t.Fatalf("swept %d %v, want 1", n, err)
	}
	var keys []string
	rows, err := db.Pool.Query(ctx, `SELECT key FROM rate_limit_windows`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		rows.Scan(&k) //nolint:errcheck
		keys = append(keys, k)
	}
	if rows.Err() != nil || len(keys) != 1 || keys[0] != "live" {
		t.Fatalf("left %v %v, want [live]", keys, rows.Err())
	}
}
