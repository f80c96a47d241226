package clickhouse_test

import (
	"context"
	"math"
	"sort"
	"strconv"
	"testing"
	"time"

	"docflow"
	"docflow/analytics"
	"docflow/analytics/clickhouse"
)

// TestHourlyReportsReadRollups: reports whose buckets are whole hours read
// the pct rollups (at 1 h, 6 h or 1 d) and the raw rows of the partial
// hours at the window's ends; their percentiles are within the buckets'
// 4.5 % of the exact nearest-rank ones, by bucket and in total; and once
// the raw rows are gone, whole-hour windows still answer the same.
func TestHourlyReportsReadRollups(t *testing.T) {
	rec, name := open(t, srv.addr, analytics.Options{FlushInterval: time.Hour})
	ctx := context.Background()
	end := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	start := end.Add(-72 * time.Hour)
	rows := recordSteps(t, rec, start, 72*time.Hour, 6000)
	exact := func(lo, hi time.Time, wait bool) (docflow.Percentiles, int64) {
		var vs []float64
		for _, r := range rows {
			if !r.at.Before(lo) && r.at.Before(hi) {
				if wait {
					vs = append(vs, r.wait)
				} else {
					vs = append(vs, r.dur)
				}
			}
		}
		sort.Float64s(vs)
		at := func(p float64) float64 {
			if len(vs) == 0 {
				return 0
			}
			return vs[max(0, int(math.Ceil(p*float64(len(vs))))-1)]
		}
		return docflow.Percentiles{P50: at(0.5), P95: at(0.95), P99: at(0.99)}, int64(len(vs))
	}
	near := func(what string, got, want docflow.Percentiles) {
		t.Helper()
		for _, c := range []struct {
			name    string
			got, wt float64
		}{{"p50", got.P50, want.P50}, {"p95", got.P95, want.P95}, {"p99", got.P99, want.P99}} {
			if math.Abs(c.got-c.wt) > 0.045*(c.wt+1) {
				t.Errorf("%s %s = %.2f, want %.2f within 4.5 %%", what, c.name, c.got, c.wt)
			}
		}
	}
	windows := []struct {
		from, to time.Time
		interval time.Duration
	}{
		{start, end, 24 * time.Hour},                                             // whole days
		{start.Add(6 * time.Hour), end.Add(-6 * time.Hour), 6 * time.Hour},       // six hours
		{start.Add(25 * time.Minute), end.Add(-70 * time.Minute), 2 * time.Hour}, // partial hours at both ends
	}
	check := func(raw bool) {
		for _, w := range windows {
			if !raw && w.from.Minute() != 0 {
				continue // its edges need the raw rows
			}
			q := docflow.AnalyticsQuery{From: w.from, To: w.to, Interval: w.interval}
			rep, err := rec.Steps(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			label := w.from.Format("Jan 2 15:04") + " to " + w.to.Format("Jan 2 15:04") + " by " + w.interval.String()
			if len(rep.Totals.Steps) != 1 {
				t.Fatalf("%s: steps %+v", label, rep.Totals.Steps)
			}
			st := rep.Totals.Steps[0]
			want, count := exact(w.from, w.to, false)
			if st.Count != count {
				t.Errorf("%s: count %d, want %d", label, st.Count, count)
			}
			near(label+" duration", st.Percentiles, want)
			wantWait, _ := exact(w.from, w.to, true)
			near(label+" queue wait", st.QueueWait, wantWait)
			if len(rep.Series) == 0 {
				t.Fatalf("%s: no series", label)
			}
			for _, p := range rep.Series {
				lo, hi := p.T, p.T.Add(w.interval)
				if lo.Before(w.from) {
					lo = w.from
				}
				if hi.After(w.to) {
					hi = w.to
				}
				want, count := exact(lo, hi, false)
				if p.Count != count {
					t.Errorf("%s: bucket %v count %d, want %d", label, p.T, p.Count, count)
				}
				near(label+" bucket "+strconv.FormatInt(p.T.Unix(), 10), p.Percentiles, want)
			}
		}
	}
	check(true)
	// Without the raw rows, whole-hour windows answer from the rollups alone.
	for d := start; d.Before(end); d = d.Add(24 * time.Hour) {
		if err := srv.conn.Exec(ctx, "ALTER TABLE "+name+".events DROP PARTITION "+d.Format("20060102")); err != nil {
			t.Fatal(err)
		}
	}
	check(false)
}

// stepRow is one step attempt recordSteps recorded.
type stepRow struct {
	at        time.Time
	dur, wait float64
}

// recordSteps records and flushes n step attempts of "ocr" spread evenly
// over span from start, their durations spread evenly over 5..2004 ms and
// queue waits a third of them, and returns them.
func recordSteps(t *testing.T, rec *clickhouse.Recorder, start time.Time, span time.Duration, n int) []stepRow {
	t.Helper()
	rows := make([]stepRow, 0, n)
	for i := range n {
		at := start.Add(time.Duration(i) * (span / time.Duration(n)))
		dur := float64(5 + (i*7919)%2000)
		rows = append(rows, stepRow{at, dur, dur / 3})
		rec.Record(docflow.Metric{Kind: docflow.MetricStep, Time: at, StepType: "ocr", Pipeline: "p", Status: docflow.StepSucceeded,
			Duration: time.Duration(dur * float64(time.Millisecond)), QueueWait: time.Duration(dur / 3 * float64(time.Millisecond))})
	}
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rows
}
