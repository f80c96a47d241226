package main

import (
	"testing"
	"time"
)

// The mix is 60 % reads of lists and details, 20 % search, 15 % uploads
// and 5 % writes, as docs/benchmarks.md says.
func TestMixShares(t *testing.T) {
	shares := map[string]int{}
	kind := map[string]string{
		"GET /api/files": "read", "GET /api/files filtered": "read", "GET /api/files/{id}": "read",
		"GET /api/search": "search", "POST /api/upload": "upload",
		"PATCH /api/files/{id}/metadata": "write", "POST /api/files/{id}/comments": "write", "POST /api/files/{id}/shares": "write",
	}
	for x := range 100 {
		r := pickRoute(x)
		k, ok := kind[r.name]
		if !ok {
			t.Fatalf("route %q has no kind", r.name)
		}
		shares[k]++
	}
	want := map[string]int{"read": 60, "search": 20, "upload": 15, "write": 5}
	for k, n := range want {
		if shares[k] != n {
			t.Errorf("%s: %d %%, want %d %%", k, shares[k], n)
		}
	}
}

func TestStepHolds(t *testing.T) {
	window := func(rate float64, ok int, lat time.Duration, errs int) mixResult {
		s := &routeStats{errs: errs}
		for range ok {
			s.lat = append(s.lat, lat)
		}
		return mixResult{Rate: rate, Duration: 10 * time.Second, Routes: map[string]*routeStats{"r": s}}
	}
	for _, c := range []struct {
		name string
		res  mixResult
		want bool
	}{
		{"quick and complete", window(10, 100, 20*time.Millisecond, 0), true},
		{"one error in a hundred", window(10, 99, 20*time.Millisecond, 1), true},
		{"two errors in a hundred", window(10, 98, 20*time.Millisecond, 2), false},
		{"slow", window(10, 100, 300*time.Millisecond, 0), false},
		{"behind", window(10, 90, 20*time.Millisecond, 0), false},
	} {
		if got, why := stepHolds(c.res, 250*time.Millisecond); got != c.want {
			t.Errorf("%s: holds %v (%s), want %v", c.name, got, why, c.want)
		}
	}
}
