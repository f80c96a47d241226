package clickhouse

import (
	"encoding/hex"
	"math"
	"reflect"
	"sort"
	"testing"
	"time"
)

// TestHistQuantilesNearestRank: the percentiles of a histogram are the
// buckets at the nearest rank of the bucket numbers, each read as its
// middle, within 4.5 % of the value at that rank.
func TestHistQuantilesNearestRank(t *testing.T) {
	for _, n := range []int{1, 2, 3, 10, 99, 100, 101, 1000, 4567} {
		var h [256]uint64
		var vals []float64
		for i := range n {
			v := float64((i*7919)%3000) + 0.25
			vals = append(vals, v)
			h[int(math.Min(255, math.Floor(8*math.Log2(v+1))))]++
		}
		sort.Float64s(vals)
		got := histQuantiles(&h)
		for i, p := range histLevels {
			want := vals[max(0, int(math.Ceil(p*float64(n)))-1)]
			if math.Abs(got[i]-want) > 0.045*(want+1) {
				t.Errorf("n=%d p%v = %.2f, want %.2f within 4.5 %%", n, p*100, got[i], want)
			}
		}
	}
	var empty [256]uint64
	for _, q := range histQuantiles(&empty) {
		if !math.IsNaN(q) {
			t.Errorf("empty histogram: %v, want NaN", q)
		}
	}
}

// TestHistCacheLifetimes: open units are not kept, recent ones for
// recentTTL, older ones until evicted; rows written into kept units drop
// them; the cache stays within maxPairs.
func TestHistCacheLifetimes(t *testing.T) {
	c := newHistCache()
	now := int64(1_800_000_000)
	h := []dimHist{{d: dims{"ocr"}, b: []uint8{3, 4}, n: []uint64{1, 2}}}
	open := unitKey{"step", 300, now - 200}    // ends 100 s ago
	recent := unitKey{"step", 300, now - 1000} // ends 700 s ago
	old := unitKey{"step", 3600, now - 3*3600} // ends two hours ago
	c.put(map[unitKey][]dimHist{open: h, recent: h, old: h}, now)
	found, missing := c.get([]unitKey{open, recent, old}, now)
	if len(missing) != 1 || missing[0] != open || len(found) != 2 {
		t.Fatalf("found %v, missing %v: want recent and old kept, open not", found, missing)
	}
	later := now + int64(recentTTL/time.Second)
	if _, missing := c.get([]unitKey{recent, old}, later); len(missing) != 1 || missing[0] != recent {
		t.Errorf("after recentTTL missing %v, want the recent unit only", missing)
	}
	// Rows written at the old unit's last minute drop it and what follows.
	c.put(map[unitKey][]dimHist{recent: h}, now)
	c.wrote(time.Unix(old.start+3000, 0), time.Unix(now, 0))
	if _, missing := c.get([]unitKey{recent, old}, now); len(missing) != 2 {
		t.Errorf("after a late write missing %v, want both", missing)
	}
	// Rows written now drop nothing.
	c.put(map[unitKey][]dimHist{old: h}, now)
	c.wrote(time.Unix(now-5, 0), time.Unix(now, 0))
	if _, missing := c.get([]unitKey{old}, now); len(missing) != 0 {
		t.Errorf("a write of current rows dropped %v", missing)
	}
	// Bounded: units of many pairs, the least recently used go first.
	big := []dimHist{{b: make([]uint8, 1<<16), n: make([]uint64, 1<<16)}}
	for i := range 200 {
		c.put(map[unitKey][]dimHist{{"step", 300, now - 10*86400 + int64(i)*300}: big}, now)
	}
	if c.pairs > maxPairs {
		t.Errorf("cache holds %d pairs, over %d", c.pairs, maxPairs)
	}
	if _, missing := c.get([]unitKey{{"step", 300, now - 10*86400 + 199*300}}, now); len(missing) != 0 {
		t.Error("the newest unit was evicted")
	}
}

// TestDecodeHist reads a state as ClickHouse serializes it, and refuses
// what is not one.
func TestDecodeHist(t *testing.T) {
	// quantilesExactWeightedState(…)(toUInt8(number % 3), toUInt64(1))
	// over numbers(10), as 18.16 gave it.
	state, _ := hex.DecodeString("03000400000000000000020300000000000000010300000000000000")
	b, n, err := decodeHist(string(state))
	if err != nil || !reflect.DeepEqual(b, []uint8{0, 2, 1}) || !reflect.DeepEqual(n, []uint64{4, 3, 3}) {
		t.Errorf("got %v %v, %v", b, n, err)
	}
	if b, n, err := decodeHist("\x00"); err != nil || len(b) != 0 || len(n) != 0 {
		t.Errorf("empty state: %v %v, %v", b, n, err)
	}
	for _, bad := range []string{"", "\x01", string(state[:len(state)-1]), string(state) + "x", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"} {
		if _, _, err := decodeHist(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
