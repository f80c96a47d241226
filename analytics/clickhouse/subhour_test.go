package clickhouse_test

import (
	"context"
	"math"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"docflow"
	"docflow/analytics"
)

// TestSubHourReportsReadRollups: reports over more than six hours whose
// buckets are whole multiples of five minutes but not of an hour (10, 15,
// 20, 30 minutes) read pct2's 30 and 5-minute grains (0007) and the raw
// rows of the minutes at the window's ends. Their percentiles are those of
// the same log-scale buckets over the raw rows of each bucket, exactly
// (the states merge exactly), hence within 4.5 % of the exact nearest-rank
// ones; counts are exact; and once the raw rows are gone, windows of whole
// five minutes answer the same.
func TestSubHourReportsReadRollups(t *testing.T) {
	rec, name := open(t, srv.addr, analytics.Options{FlushInterval: time.Hour})
	ctx := context.Background()
	end := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	start := end.Add(-48 * time.Hour)
	rows := recordSteps(t, rec, start, 48*time.Hour, 20000)
	// The log-scale buckets' percentiles of the raw rows, by bucket of
	// interval (0: in total), computed by the server from events alone.
	fromRaw := func(lo, hi time.Time, interval time.Duration, col string) map[int64]docflow.Percentiles {
		t.Helper()
		sec := strconv.FormatInt(int64(interval/time.Second), 10)
		tcol := "toDateTime(0)"
		if interval > 0 {
			tcol = "toDateTime(intDiv(toUInt32(ts), " + sec + ") * " + sec + ")"
		}
		rs, err := srv.conn.Query(ctx, "SELECT "+tcol+" AS t, quantilesExactWeighted(0.5, 0.95, 0.99)(toUInt8(least(255, floor(8 * log2(greatest(0, "+col+") + 1)))), toUInt64(1)) FROM "+
			name+".events WHERE kind = 'step' AND ts >= toDateTime(?) AND ts < toDateTime(?) GROUP BY t", lo.Unix(), hi.Unix())
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		out := map[int64]docflow.Percentiles{}
		for rs.Next() {
			var at time.Time
			var bs []uint8
			if err := rs.Scan(&at, &bs); err != nil {
				t.Fatal(err)
			}
			ms := func(b uint8) float64 { return math.Pow(2, (float64(b)+0.5)/8) - 1 }
			out[at.Unix()] = docflow.Percentiles{P50: ms(bs[0]), P95: ms(bs[1]), P99: ms(bs[2])}
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	exact := func(lo, hi time.Time) (docflow.Percentiles, int64) {
		var vs []float64
		for _, r := range rows {
			if !r.at.Before(lo) && r.at.Before(hi) {
				vs = append(vs, r.dur)
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
	same := func(what string, got, want docflow.Percentiles) {
		t.Helper()
		if math.Abs(got.P50-want.P50) > 1e-9 || math.Abs(got.P95-want.P95) > 1e-9 || math.Abs(got.P99-want.P99) > 1e-9 {
			t.Errorf("%s = %+v, want %+v (the raw rows' buckets)", what, got, want)
		}
	}
	near := func(what string, got, want docflow.Percentiles) {
		t.Helper()
		for _, c := range [][3]float64{{got.P50, want.P50, 50}, {got.P95, want.P95, 95}, {got.P99, want.P99, 99}} {
			if math.Abs(c[0]-c[1]) > 0.045*(c[1]+1) {
				t.Errorf("%s p%.0f = %.2f, want %.2f within 4.5 %%", what, c[2], c[0], c[1])
			}
		}
	}
	type window struct {
		from, to time.Time
		interval time.Duration
	}
	ragged := []window{
		{start.Add(3*time.Hour + 7*time.Minute), start.Add(27*time.Hour + 3*time.Minute), 10 * time.Minute},
		{start.Add(2*time.Minute + 30*time.Second), start.Add(36*time.Hour - 11*time.Minute), 15 * time.Minute},
		{start.Add(5*time.Hour + 13*time.Minute), start.Add(29*time.Hour + 44*time.Minute), 20 * time.Minute},
		{start.Add(61 * time.Minute), end.Add(-3 * time.Minute), 30 * time.Minute},
		{start.Add(25 * time.Minute), end.Add(-70 * time.Minute), time.Hour},      // hours: 5-minute rows beside them
		{start.Add(4 * time.Minute), start.Add(9 * time.Minute), 5 * time.Minute}, // short: per-minute states
		{start.Add(7 * time.Minute), start.Add(5*time.Hour + 2*time.Minute), 10 * time.Minute},
	}
	whole := []window{
		{start.Add(3*time.Hour + 10*time.Minute), start.Add(27*time.Hour + 5*time.Minute), 10 * time.Minute},
		{start.Add(15 * time.Minute), start.Add(36*time.Hour - 10*time.Minute), 15 * time.Minute},
		{start.Add(65 * time.Minute), end.Add(-5 * time.Minute), 30 * time.Minute},
	}
	check := func(ws []window, raw bool) map[string]*docflow.StepsReport {
		reps := map[string]*docflow.StepsReport{}
		for _, w := range ws {
			q := docflow.AnalyticsQuery{From: w.from, To: w.to, Interval: w.interval}
			rep, err := rec.Steps(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			label := w.from.Format("Jan 2 15:04:05") + " to " + w.to.Format("Jan 2 15:04:05") + " by " + w.interval.String()
			reps[label] = rep
			if len(rep.Totals.Steps) != 1 || len(rep.Series) == 0 {
				t.Fatalf("%s: steps %+v, %d points", label, rep.Totals.Steps, len(rep.Series))
			}
			lo, hi := analytics.MinuteWindow(w.from, w.to)
			st := rep.Totals.Steps[0]
			want, count := exact(lo, hi)
			if st.Count != count {
				t.Errorf("%s: count %d, want %d", label, st.Count, count)
			}
			near(label+" duration", st.Percentiles, want)
			if !raw {
				continue
			}
			// Windows up to six hours merge the per-minute states.
			rollup := w.interval%(5*time.Minute) == 0 && hi.Sub(lo) > 6*time.Hour
			if rollup {
				same(label+" duration", st.Percentiles, fromRaw(lo, hi, 0, "duration_ms")[0])
				same(label+" queue wait", st.QueueWait, fromRaw(lo, hi, 0, "queue_wait_ms")[0])
			}
			durs, waits := fromRaw(lo, hi, w.interval, "duration_ms"), fromRaw(lo, hi, w.interval, "queue_wait_ms")
			for _, p := range rep.Series {
				blo, bhi := p.T, p.T.Add(w.interval)
				blo, bhi = maxTime(blo, lo), minTime(bhi, hi)
				want, count := exact(blo, bhi)
				if p.Count != count {
					t.Errorf("%s: bucket %v count %d, want %d", label, p.T, p.Count, count)
				}
				if rollup {
					what := label + " bucket " + p.T.Format("15:04")
					same(what, p.Percentiles, durs[p.T.Unix()])
					if math.Abs(p.QueueWaitP95-waits[p.T.Unix()].P95) > 1e-9 {
						t.Errorf("%s queue wait p95 = %v, want %v", what, p.QueueWaitP95, waits[p.T.Unix()].P95)
					}
					near(what, p.Percentiles, want)
				}
			}
		}
		return reps
	}
	check(ragged, true)
	before := check(whole, true)
	// Without the raw rows, windows of whole five minutes answer the same
	// from pct2 alone (the counts from the per-minute rollups).
	for d := start; d.Before(end); d = d.Add(24 * time.Hour) {
		if err := srv.conn.Exec(ctx, "ALTER TABLE "+name+".events DROP PARTITION "+d.Format("20060102")); err != nil {
			t.Fatal(err)
		}
	}
	after := check(whole, false)
	for label, b := range before {
		a := after[label]
		if len(a.Series) != len(b.Series) {
			t.Fatalf("%s: %d points without the raw rows, %d with", label, len(a.Series), len(b.Series))
		}
		for i := range b.Series {
			if !reflect.DeepEqual(a.Series[i], b.Series[i]) {
				t.Errorf("%s: point %+v without the raw rows, %+v with", label, a.Series[i], b.Series[i])
			}
		}
		if !reflect.DeepEqual(a.Totals.Steps[0], b.Totals.Steps[0]) {
			t.Errorf("%s: totals %+v without the raw rows, %+v with", label, a.Totals.Steps[0], b.Totals.Steps[0])
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
