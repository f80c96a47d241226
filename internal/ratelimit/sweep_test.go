package ratelimit

import (
	"testing"
	"time"
)

// TestSweepDropsLapsedBuckets: a bucket whose permits and refusal have
// lapsed is dropped; one with permits or a refusal standing, or in use,
// stays.
func TestSweepDropsLapsedBuckets(t *testing.T) {
	now := time.Now()
	inUse := &bucket{}
	inUse.mu.Lock()
	defer inUse.mu.Unlock()
	m := map[string]*bucket{
		"lapsed":  {permits: 3, until: now.Add(-time.Second)},
		"permits": {permits: 3, until: now.Add(time.Second)},
		"refused": {until: now.Add(time.Second), refusedUntil: now.Add(time.Millisecond)},
		"in use":  inUse,
	}
	sweep(m, now)
	if _, ok := m["lapsed"]; ok || len(m) != 3 {
		t.Fatalf("after the sweep: %v, want all but the lapsed one", m)
	}
}
