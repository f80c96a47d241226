package clickhouse

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"docflow"
	"docflow/analytics"
)

// A report reads each part of its window from the coarsest rollup that
// covers it whole and fits its buckets: days, six hours, hours, then
// minutes (or raw rows) at the edges. Counts come from the *_coarse (0005),
// *_1h (0003) and *_1m (0002) tables; percentiles, when the buckets are
// whole hours or, over more than pctFineSpan, whole multiples of five
// minutes, from pct2 (0004's pct, in granules of 8 rows since 0006, with
// 5 and 30-minute grains since 0007), whose edges (the minutes beside the
// whole five minutes) are read from the raw rows since the per-minute
// quantile states do not merge with pct2's.

const (
	fiveMin  = int64(5 * time.Minute / time.Second)
	halfHour = int64(30 * time.Minute / time.Second)
	hour     = int64(time.Hour / time.Second)
	sixHours = 6 * hour
	day      = 24 * hour
)

// span is a query's window widened to whole minutes (the rollups' grain)
// and its bucket width, as SQL fragments built from integers only.
type span struct {
	lo, hi   int64  // the widened window, Unix seconds
	interval int64  // bucket width, seconds
	t        string // the bucket start of minute, as a DateTime
	hourly   bool   // buckets are whole hours: read the hourly rollups too
	db       string
	// parts, when set, are the ranges of [lo, hi) that counting queries
	// read (eachSeries: the buckets not kept); nil reads [lo, hi).
	parts [][2]int64
	// minutes reads the parts from the per-minute rollups alone: a
	// window's edges, a few hours, are cheaper to read from one table
	// than from the tiers' UNION ALL (each arm costs 18.16 milliseconds).
	minutes bool
}

// ranges are the parts of the window that counting queries read.
func (s span) ranges() [][2]int64 {
	if s.parts != nil {
		return s.parts
	}
	return [][2]int64{{s.lo, s.hi}}
}

// betweenAny is between over each of rs, OR-ed (parenthesized).
func betweenAny(rs [][2]int64) string {
	conds := make([]string, len(rs))
	for i, r := range rs {
		conds[i] = "(" + between(r[0], r[1]) + ")"
	}
	return "(" + strings.Join(conds, " OR ") + ")"
}

func newSpan(q docflow.AnalyticsQuery, database string) span {
	lo, hi := analytics.MinuteWindow(q.From, q.To)
	sec := strconv.FormatInt(int64(q.Interval/time.Second), 10)
	return span{
		lo: lo.Unix(), hi: hi.Unix(), db: database, interval: int64(q.Interval / time.Second),
		t:      "toDateTime(intDiv(toUInt32(minute), " + sec + ") * " + sec + ") AS t",
		hourly: q.Interval%time.Hour == 0,
	}
}

func between(lo, hi int64) string {
	return "minute >= toDateTime(" + strconv.FormatInt(lo, 10) + ") AND minute < toDateTime(" + strconv.FormatInt(hi, 10) + ")"
}

// countCols are the columns of each rollup that counting reports read:
// all but the quantile states, which are large (a sample of up to 8,192
// values each) and which 18.16 would read whole through a SELECT * under
// UNION ALL even where the outer query does not use them.
var countCols = map[string]string{
	"steps":        "step_type, minute, pipeline, status, error_class, n, bytes_in, bytes_out, sample, last",
	"documents":    "minute, pipeline, status, n",
	"intake":       "channel, type, minute, status, n, bytes",
	"requests":     "route, method, minute, http_status, n",
	"integrations": "kind, type, direction, minute, status, n, bytes",
	"lag":          "topic, topic_partition, minute, peak, last, at",
	"process":      "process, worker, minute, cpu, rss, goroutines, dropped, at",
}

// src is what a report reads of rollup (steps, intake, …) over the window,
// followed by an open WHERE clause: the per-minute table; or, when the
// buckets are whole hours, each part of the window from the coarsest
// rollup whose grain divides the buckets and that covers the part whole
// (*_coarse's days or six hours, *_1h's hours, *_1m's minutes at the
// edges), their states merged alike (the tables share the counting
// columns). Only countCols are there to read; percentiles come from
// percentiles (tiers.go).
func (s span) src(rollup string) string { return s.srcCols(rollup, countCols[rollup]) }

// countGrains are the grains of the *_coarse tables (0005) and of *_1h,
// coarsest first.
var countGrains = []int64{day, sixHours, hour}

// srcCols is src reading only cols (a subset of countCols[rollup]): 18.16
// reads every column an arm of UNION ALL selects, used or not.
func (s span) srcCols(rollup, cols string) string {
	if !s.hourly || s.minutes {
		return s.db + "." + rollup + "_1m WHERE " + betweenAny(s.ranges())
	}
	var grains []int64
	for _, g := range countGrains {
		if s.interval%g == 0 {
			grains = append(grains, g)
		}
	}
	return s.tiers(rollup, cols, grains)
}

// tiers is what srcCols reads of rollup over the window at grains.
func (s span) tiers(rollup, cols string, grains []int64) string {
	minutes := s.db + "." + rollup + "_1m"
	// The pieces of each grain, OR-ed into one arm per table.
	ranges := map[int64][]string{}
	var order []int64
	var pieces []piece
	for _, r := range s.ranges() {
		pieces = append(pieces, split(r[0], r[1], grains...)...)
	}
	for _, p := range pieces {
		if ranges[p.grain] == nil {
			order = append(order, p.grain)
		}
		ranges[p.grain] = append(ranges[p.grain], "("+between(p.lo, p.hi)+")")
	}
	if len(order) == 1 && order[0] == 60 {
		return minutes + " WHERE " + betweenAny(s.ranges())
	}
	// One arm per table, its ranges OR-ed (each arm costs 18.16 a few
	// milliseconds of its own), as "table WHERE (…)": open for the
	// caller's AND.
	var arms, coarse []string
	for _, g := range order {
		in := strings.Join(ranges[g], " OR ")
		switch g {
		case 60:
			arms = append(arms, minutes+" WHERE ("+in+")")
		case hour:
			arms = append(arms, s.db+"."+rollup+"_1h WHERE ("+in+")")
		default:
			coarse = append(coarse, "(grain = "+strconv.FormatInt(g, 10)+" AND ("+in+"))")
		}
	}
	if len(coarse) > 0 {
		arms = append(arms, s.db+"."+rollup+"_coarse WHERE ("+strings.Join(coarse, " OR ")+")")
	}
	if len(arms) == 1 {
		return arms[0] // one table: no subquery
	}
	for i, a := range arms {
		arms[i] = "SELECT " + cols + " FROM " + a
	}
	return "(" + strings.Join(arms, " UNION ALL ") + ") WHERE 1"
}

// pctGrains are pct2's grains, coarsest first.
var pctGrains = []int64{day, sixHours, hour, halfHour, fiveMin}

// piece is [lo, hi) of a window, read at grain seconds (60: minutes).
type piece struct {
	grain, lo, hi int64
}

// split cuts [lo, hi) into pieces of the coarsest of grains (largest
// first) that fit whole, and minutes for the rest.
func split(lo, hi int64, grains ...int64) []piece {
	if hi <= lo {
		return nil
	}
	if len(grains) == 0 {
		return []piece{{60, lo, hi}}
	}
	g := grains[0]
	a, b := (lo+g-1)/g*g, hi/g*g
	if b <= a {
		return split(lo, hi, grains[1:]...)
	}
	out := split(lo, a, grains[1:]...)
	out = append(out, piece{g, a, b})
	return append(out, split(b, hi, grains[1:]...)...)
}

// metric is one measured duration: where its per-minute quantile states
// are, which raw rows hold it, and its dimensions (the pct tables' d1..d3).
type metric struct {
	name   string    // pct_* metric column
	rollup string    // per-minute rollup, without _1m
	state  string    // its quantile state column
	kinds  string    // raw rows: condition on kind
	value  string    // raw rows: the duration column
	dims   [3]string // rollup and raw columns of d1..d3 ("" = none)
}

var (
	stepDur     = metric{"step", "steps", "dur", "kind = 'step'", "duration_ms", [3]string{"step_type"}}
	stepWait    = metric{"wait", "steps", "wait", "kind = 'step'", "queue_wait_ms", [3]string{"step_type"}}
	documentDur = metric{"document", "documents", "dur", "kind = 'document'", "duration_ms", [3]string{}}
	intakeDur   = metric{"intake", "intake", "dur", "kind = 'intake'", "duration_ms", [3]string{"channel", "type"}}
	requestDur  = metric{"request", "requests", "dur", "kind = 'request'", "duration_ms", [3]string{"method", "route"}}
	integDur    = metric{"integration", "integrations", "dur", "kind IN ('integration', 'delivery')", "duration_ms", [3]string{"kind", "type", "direction"}}
)

// dimCols selects m's dimensions from its rollup or raw rows as d1..d3.
func (m metric) dimCols() string {
	cols := make([]string, 3)
	for i, c := range m.dims {
		if c == "" {
			c = "''"
		}
		cols[i] = c + " AS d" + strconv.Itoa(i+1)
	}
	return strings.Join(cols, ", ")
}

// bucketOf is the pct tables' log-scale bucket of a duration column, as
// in migrations/0004_pct.sql (keep the two alike).
func bucketOf(col string) string {
	return "toUInt8(least(255, floor(8 * log2(greatest(0, " + col + ") + 1))))"
}

// threeCols selects the p50, p95 and p99 of the quantiles aggregate agg
// as three Float64 columns, each wrapped in pre and post: the aggregate
// runs once (the server computes an aggregate named alike once), and the
// client scans three numbers per row rather than an array (by reflection,
// a few milliseconds of a report with a thousand rows).
func threeCols(agg, pre, post string) string {
	cols := make([]string, 3)
	for i := range cols {
		cols[i] = "toFloat64(" + pre + agg + "[" + strconv.Itoa(i+1) + "]" + post + ")"
	}
	return strings.Join(cols, ", ")
}

// pctSQL returns the query of m's [p50, p95, p99] over s for a window
// that is not pctRollup: rows of ask (a number the caller gives, to tell
// the parts of a UNION ALL apart), the bucket t (0 in totals), d1, d2, d3
// and the percentiles; grouped by the bucket when series and the first
// keep dimensions (the others read ”). It merges the per-minute quantile
// states; d1, when not empty, keeps that first dimension only.
func (s span) pctSQL(ask int, m metric, series bool, keep int, d1 string) (string, []any) {
	cond, args := between(s.lo, s.hi), []any{}
	if d1 != "" {
		cond, args = cond+" AND d1 = ?", []any{d1}
	}
	arm := "SELECT " + m.dimCols() + ", minute, " + m.state + " AS h FROM " + s.db + "." + m.rollup + "_1m WHERE " + cond
	sel, keys := []string{"toUInt8(" + strconv.Itoa(ask) + ") AS ask", "toDateTime(0) AS t"}, []string{}
	if series {
		sel, keys = []string{sel[0], s.t}, []string{"t"}
	}
	for i := 1; i <= 3; i++ {
		d := "d" + strconv.Itoa(i)
		if i <= keep {
			sel, keys = append(sel, d), append(keys, d)
		} else {
			sel = append(sel, "''")
		}
	}
	if len(keys) == 0 {
		// A constant key: no rows (rather than one of empty states) when
		// nothing matched.
		keys = []string{"d3"}
	}
	return "SELECT " + strings.Join(sel, ", ") + ", " + threeCols("quantilesMerge(0.5, 0.95, 0.99)(h)", "", "") + " FROM (" + arm +
		") GROUP BY " + strings.Join(keys, ", "), args
}

// pctRollup reports whether s's percentiles come from pct2's histograms
// (hist.go): the buckets are whole hours and the window holds one; or
// they are whole multiples of pct2's finest grain (five minutes) and the
// window is longer than pctFineSpan.
func (s span) pctRollup() bool {
	if s.hourly && s.hi/hour*hour > (s.lo+hour-1)/hour*hour {
		return true
	}
	return s.interval%fiveMin == 0 && s.hi-s.lo > pctFineSpan
}

// pctFineSpan is the longest window whose sub-hour buckets merge the
// per-minute quantile states, whose percentiles interpolate between the
// values (exact up to 8,192 values a minute, as PostgreSQL's): up to 360
// states per series, cheap. Longer ones (a day by 10 minutes, three days
// by 30, which merged thousands) read pct2's 5 and 30-minute histograms.
const pctFineSpan = 6 * hour

// pkey keys a percentile row: bucket start (0 in totals) and dimensions.
type pkey struct {
	t          int64
	d1, d2, d3 string
}

// pcts maps pkeys to percentiles.
type pcts map[pkey]docflow.Percentiles

// at returns the percentiles of bucket t (zero: totals) and dims.
func (p pcts) at(t time.Time, dims ...string) docflow.Percentiles {
	k := pkey{}
	if !t.IsZero() {
		k.t = t.Unix()
	}
	for i, d := range dims {
		switch i {
		case 0:
			k.d1 = d
		case 1:
			k.d2 = d
		case 2:
			k.d3 = d
		}
	}
	return p[k]
}

// pctAsk is one set of percentiles a report wants: m's, by bucket when
// series, by the first keep dimensions, into out.
type pctAsk struct {
	m      metric
	series bool
	keep   int
	out    pcts
}

// percentiles fills the out maps of asks (made by the caller, so that
// this can run beside the counts' queries): from pct2's histograms for a
// pctRollup window (hist.go), otherwise by one query merging the
// per-minute quantile states (one round trip and one query's overhead,
// rather than a query each). d1, when not empty, keeps the first
// dimension d1 only.
func (q Queries) percentiles(ctx context.Context, s span, d1 string, asks ...pctAsk) error {
	if s.pctRollup() {
		return q.histPercentiles(ctx, s, d1, asks)
	}
	var parts []string
	var args []any
	for i, a := range asks {
		sql, as := s.pctSQL(i, a.m, a.series, a.keep, d1)
		parts, args = append(parts, sql), append(args, as...)
	}
	return q.each(ctx, asks[0].m.name+" percentiles", strings.Join(parts, " UNION ALL "), args, func(r driver.Rows) error {
		var k pkey
		var ask uint8
		var t time.Time
		qs := make([]float64, 3)
		if err := r.Scan(&ask, &t, &k.d1, &k.d2, &k.d3, &qs[0], &qs[1], &qs[2]); err != nil {
			return err
		}
		if int(ask) >= len(asks) {
			return fmt.Errorf("percentiles: row of ask %d", ask)
		}
		if asks[ask].series {
			k.t = t.Unix()
		}
		asks[ask].out[k] = analytics.ToPercentiles(qs)
		return nil
	})
}
