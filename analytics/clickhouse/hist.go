package clickhouse

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"docflow/analytics"
)

// Percentiles of windows read from rollups (pctRollup) come from the
// duration histograms of pct2 (migrations 0004, 0006, 0007: a
// quantilesExactWeighted state per grain, metric, dimensions and bucket
// start, that is the count of each log-scale bucket), read as their
// serialized bytes and merged here rather than by the server: a unit (a metric's histograms, every dimension's, over one
// bucket of one grain) once read is kept while it cannot change, so a
// dashboard that asks for a moving window again and again reads from the
// server only the units it has not seen (its new edges).
//
// The histograms' buckets are log-scale, eight per doubling (bucketOf);
// a percentile is the bucket at its nearest rank (the first whose running
// count reaches ceil(p * total), as quantileExactWeighted), read as the
// bucket's geometric middle (of ms+1): within 4.5 % of every value in it.

// unitKey names a unit: metric's histograms over [start, start+grain).
// Units of a grain of a minute are read from the raw rows (the edges of a
// window); the others from pct2.
type unitKey struct {
	metric       string
	grain, start int64
}

// dims are a histogram's dimensions (pct2's d1..d3).
type dims [3]string

// dimHist is one dimension's histogram in a unit: counts n of buckets b
// (a bucket may appear more than once: rows of parts not yet merged).
type dimHist struct {
	d dims
	b []uint8
	n []uint64
}

// Cache bounds and lifetimes.
const (
	// settleSeconds: a unit is kept only once it ended this long ago.
	// Recorders flush every few seconds (DefaultFlushInterval), so by
	// then its rows have arrived, unless a writer was held back.
	settleSeconds = 120
	// recentTTL: a unit that ended within the last finalAfter is read
	// again after recentTTL, so that rows held back by a writer (a
	// ClickHouse that refused its inserts for a while) still show.
	recentTTL  = time.Minute
	finalAfter = int64(time.Hour / time.Second)
	// maxPairs bounds the (bucket, count) pairs kept (some 10 bytes
	// each, with the dimensions' strings shared): a 90-day /steps reads
	// some 300,000.
	maxPairs = 4 << 20
)

// histCache keeps units read from the server. Safe for concurrent use.
type histCache struct {
	mu    sync.Mutex
	units map[unitKey]*cachedUnit
	pairs int
	tick  uint64
}

type cachedUnit struct {
	hists   []dimHist
	rows    [][]any // a bucket's rows (eachSeries)
	pairs   int
	expires int64 // Unix seconds; 0: never
	used    uint64
}

func newHistCache() *histCache { return &histCache{units: map[unitKey]*cachedUnit{}} }

// get returns the cached units among keys, and the keys missing.
func (c *histCache) get(keys []unitKey, now int64) (map[unitKey][]dimHist, []unitKey) {
	found := make(map[unitKey][]dimHist, len(keys))
	missing := c.lookup(keys, now, func(k unitKey, u *cachedUnit) { found[k] = u.hists })
	return found, missing
}

// getRows is get for the rows of buckets (eachSeries).
func (c *histCache) getRows(keys []unitKey, now int64) (map[unitKey][][]any, []unitKey) {
	found := make(map[unitKey][][]any, len(keys))
	missing := c.lookup(keys, now, func(k unitKey, u *cachedUnit) { found[k] = u.rows })
	return found, missing
}

// lookup calls hit for each of keys kept and returns the others.
func (c *histCache) lookup(keys []unitKey, now int64, hit func(unitKey, *cachedUnit)) []unitKey {
	var missing []unitKey
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	for _, k := range keys {
		u := c.units[k]
		if u == nil || (u.expires != 0 && now >= u.expires) {
			missing = append(missing, k)
			continue
		}
		u.used = c.tick
		hit(k, u)
	}
	return missing
}

// put keeps units that cannot change any more (see settleSeconds), read
// at now.
func (c *histCache) put(units map[unitKey][]dimHist, now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	for k, hs := range units {
		n := 0
		for _, h := range hs {
			n += len(h.b)
		}
		c.keep(k, &cachedUnit{hists: hs, pairs: n}, now)
	}
	if c.pairs > maxPairs {
		c.evict()
	}
}

// putRows is put for the rows of buckets.
func (c *histCache) putRows(buckets map[unitKey][][]any, now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	for k, rows := range buckets {
		c.keep(k, &cachedUnit{rows: rows, pairs: rowsWeight(rows)}, now)
	}
	if c.pairs > maxPairs {
		c.evict()
	}
}

// keep stores u under k when k has closed. The caller holds mu.
func (c *histCache) keep(k unitKey, u *cachedUnit, now int64) {
	end := k.start + k.grain
	if end > now-settleSeconds {
		return
	}
	if end > now-finalAfter {
		u.expires = now + int64(recentTTL/time.Second)
	}
	if old := c.units[k]; old != nil {
		c.pairs -= old.pairs
	}
	u.used = c.tick
	c.units[k] = u
	c.pairs += u.pairs
}

// evict drops the least recently used units down to three quarters of
// maxPairs. The caller holds mu.
func (c *histCache) evict() {
	keys := make([]unitKey, 0, len(c.units))
	for k := range c.units {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c.units[keys[i]].used < c.units[keys[j]].used })
	for _, k := range keys {
		if c.pairs <= maxPairs*3/4 {
			break
		}
		c.pairs -= c.units[k].pairs
		delete(c.units, k)
	}
}

// wrote is told the earliest time of rows written: it drops the units
// they fall in when those may be kept (rows written late, or dated in the
// past), so a process reads its own writes.
func (c *histCache) wrote(earliest time.Time, now time.Time) {
	ts := earliest.Unix()
	if ts > now.Unix()-settleSeconds {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, u := range c.units {
		if k.start+k.grain > ts {
			c.pairs -= u.pairs
			delete(c.units, k)
		}
	}
}

// histUnits returns the units that answer ms over s: the pieces of the
// window at grains (pctGrains; a series' only those that divide its
// buckets), a unit per grain-long step, and minutes at the edges.
func (s span) histUnits(ms []metric, series bool) []unitKey {
	var grains []int64
	for _, g := range pctGrains {
		if !series || s.interval%g == 0 {
			grains = append(grains, g)
		}
	}
	lo, hi := s.lo, s.hi
	if s.interval >= sixHours {
		// Coarse buckets: the edges' partial hours are read whole, so a
		// window that moves by minutes reads no new unit until an edge
		// crosses an hour. A percentile of an edge bucket then also covers
		// up to 59 minutes beyond the window, inside the same bucket;
		// counts stay exact.
		lo, hi = lo/hour*hour, (hi+hour-1)/hour*hour
	}
	var keys []unitKey
	for _, p := range split(lo, hi, grains...) {
		for start := p.lo; start < p.hi; start += p.grain {
			for _, m := range ms {
				keys = append(keys, unitKey{m.name, p.grain, start})
			}
		}
	}
	return keys
}

// fetchUnits reads keys from the server: units of a grain of five minutes
// or more from pct2, minutes from the raw rows of ms. Every key is in the
// answer, with no histograms when nothing was recorded.
func (q Queries) fetchUnits(ctx context.Context, keys []unitKey, ms []metric) (map[unitKey][]dimHist, error) {
	out := make(map[unitKey][]dimHist, len(keys))
	for _, k := range keys {
		out[k] = nil
	}
	// Runs of consecutive starts, per metric and grain: one range each.
	sorted := slices.Clone(keys)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.metric != b.metric {
			return a.metric < b.metric
		}
		if a.grain != b.grain {
			return a.grain < b.grain
		}
		return a.start < b.start
	})
	var pctConds []string
	raw := map[string][]string{}
	var last unitKey
	var lo int64
	flush := func() {
		switch {
		case last.grain >= fiveMin:
			pctConds = append(pctConds, "(grain = "+strconv.FormatInt(last.grain, 10)+" AND metric = '"+last.metric+"' AND "+between(lo, last.start+last.grain)+")")
		case last.grain > 0:
			raw[last.metric] = append(raw[last.metric], "(ts >= toDateTime("+strconv.FormatInt(lo, 10)+") AND ts < toDateTime("+strconv.FormatInt(last.start+last.grain, 10)+"))")
		}
	}
	for _, k := range sorted {
		if k.metric == last.metric && k.grain == last.grain && k.start == last.start+last.grain {
			last = k
			continue
		}
		flush()
		last, lo = k, k.start
	}
	flush()
	// The states come as their serialized bytes (toString), which
	// decodeHist reads: the driver has no type for an aggregate state.
	var arms []string
	if len(pctConds) > 0 {
		arms = append(arms, "SELECT grain, metric, toUInt32(minute) AS m, d1, d2, d3, toString(h) AS s FROM "+q.database+
			".pct2 WHERE "+strings.Join(pctConds, " OR "))
	}
	for _, m := range ms {
		if rs := raw[m.name]; len(rs) > 0 {
			arms = append(arms, "SELECT toUInt32(60) AS grain, '"+m.name+"' AS metric, toUInt32(toStartOfMinute(ts)) AS m, "+m.dimCols()+
				", toString(quantilesExactWeightedState(0.5, 0.95, 0.99)("+bucketOf(m.value)+", toUInt64(1))) AS s FROM "+q.database+
				".events WHERE "+m.kinds+" AND ("+strings.Join(rs, " OR ")+") GROUP BY m, d1, d2, d3")
		}
	}
	if len(arms) == 0 {
		return out, nil
	}
	err := q.each(ctx, "histograms", strings.Join(arms, " UNION ALL "), nil, func(r driver.Rows) error {
		var grain, start uint32
		var h dimHist
		var metric, state string
		if err := r.Scan(&grain, &metric, &start, &h.d[0], &h.d[1], &h.d[2], &state); err != nil {
			return err
		}
		var err error
		if h.b, h.n, err = decodeHist(state); err != nil {
			return err
		}
		k := unitKey{metric, int64(grain), int64(start)}
		out[k] = append(out[k], h)
		return nil
	})
	return out, err
}

// decodeHist reads a quantilesExactWeighted state of UInt8 values and
// UInt64 weights as ClickHouse serializes it (its hash map: the number of
// entries as a varint, then each value's byte and its weight, 8 bytes
// little-endian), the same in 18.16 and current releases.
func decodeHist(s string) ([]uint8, []uint64, error) {
	b := []byte(s)
	n, used := binary.Uvarint(b)
	if used <= 0 || n > 256 || uint64(len(b)-used) != 9*n {
		return nil, nil, fmt.Errorf("histogram state of %d bytes is not %d entries", len(b), n)
	}
	b = b[used:]
	bs, ns := make([]uint8, n), make([]uint64, n)
	for i := range bs {
		bs[i], ns[i] = b[0], binary.LittleEndian.Uint64(b[1:9])
		b = b[9:]
	}
	return bs, ns, nil
}

// histPercentiles answers asks (of one metric or several) over s from the
// units of pct2 and the raw rows, kept or read; d1, when not empty, keeps only the
// histograms of that first dimension. When an ask is a series, every ask
// reads the series' units, so the totals cover the very rows of the
// series.
func (q Queries) histPercentiles(ctx context.Context, s span, d1 string, asks []pctAsk) error {
	series := false
	var ms []metric
	for _, a := range asks {
		series = series || a.series
		if !slices.ContainsFunc(ms, func(m metric) bool { return m.name == a.m.name }) {
			ms = append(ms, a.m)
		}
	}
	keys := s.histUnits(ms, series)
	now := time.Now().Unix()
	var units map[unitKey][]dimHist
	var missing []unitKey
	if q.hists != nil {
		units, missing = q.hists.get(keys, now)
	} else {
		units, missing = map[unitKey][]dimHist{}, keys
	}
	if len(missing) > 0 {
		read, err := q.fetchUnits(ctx, missing, ms)
		if err != nil {
			return err
		}
		if q.hists != nil {
			q.hists.put(read, now)
		}
		for k, hs := range read {
			units[k] = hs
		}
	}
	// keys run in start order (split's pieces are in order), so a
	// series' buckets are finished one after another.
	for _, a := range asks {
		var cur, totals histSet
		curT := int64(-1)
		for _, k := range keys {
			if k.metric != a.m.name {
				continue
			}
			t := k.start - k.start%s.interval
			if a.series && t != curT {
				cur.finish(curT, a.out)
				curT = t
			}
			for _, h := range units[k] {
				if d1 != "" && h.d[0] != d1 {
					continue
				}
				d := h.d
				for i := a.keep; i < 3; i++ {
					d[i] = ""
				}
				if a.series {
					cur.add(d, h)
				} else {
					totals.add(d, h)
				}
			}
		}
		if a.series {
			cur.finish(curT, a.out)
		} else {
			totals.finish(0, a.out)
		}
	}
	return nil
}

// histSet merges histograms by dimensions.
type histSet struct {
	by map[dims]*[256]uint64
}

func (hs *histSet) add(d dims, h dimHist) {
	if hs.by == nil {
		hs.by = map[dims]*[256]uint64{}
	}
	acc := hs.by[d]
	if acc == nil {
		acc = new([256]uint64)
		hs.by[d] = acc
	}
	for i, b := range h.b {
		acc[b] += h.n[i]
	}
}

// finish writes the percentiles of each merged histogram into out under
// bucket t (0: totals), and empties the set.
func (hs *histSet) finish(t int64, out pcts) {
	for d, acc := range hs.by {
		out[pkey{t, d[0], d[1], d[2]}] = analytics.ToPercentiles(histQuantiles(acc))
	}
	clear(hs.by)
}

// histLevels are the percentiles reports give.
var histLevels = [3]float64{0.5, 0.95, 0.99}

// histQuantiles returns the p50, p95 and p99 of h in milliseconds, as
// quantilesExactWeighted over bucket numbers would, each bucket read as
// its geometric middle. An empty h gives NaNs.
func histQuantiles(h *[256]uint64) []float64 {
	var total uint64
	for _, n := range h {
		total += n
	}
	qs := make([]float64, len(histLevels))
	if total == 0 {
		for i := range qs {
			qs[i] = math.NaN()
		}
		return qs
	}
	for i, p := range histLevels {
		threshold := math.Ceil(float64(total) * p)
		var acc float64
		b := 255
		for j, n := range h {
			acc += float64(n)
			if acc >= threshold && n > 0 {
				b = j
				break
			}
		}
		qs[i] = math.Pow(2, (float64(b)+0.5)/8) - 1
	}
	return qs
}
