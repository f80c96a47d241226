package clickhouse_test

import (
	"context"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"docflow"
	"docflow/analytics"
	"docflow/analytics/clickhouse"
)

// countingConn counts the queries, and those that read histograms.
type countingConn struct {
	driver.Conn
	all, hist atomic.Int64
}

func (c *countingConn) Query(ctx context.Context, query string, args ...any) (driver.Rows, error) {
	c.all.Add(1)
	if strings.Contains(query, ".hist WHERE") || strings.Contains(query, ".events WHERE") {
		c.hist.Add(1)
	}
	return c.Conn.Query(ctx, query, args...)
}

// TestHistogramsKept: a report read again asks the server nothing (its
// histograms and its closed buckets' rows kept), and answers the same; a
// window moved by a few minutes reads its new edges only; a recorder's queries see the rows it writes into closed
// buckets (late or dated in the past), and another process's queries see
// the same answers as its own.
func TestHistogramsKept(t *testing.T) {
	f := newKeptFixture(t, 4000)
	rec, name, start, end, conn, q := f.rec, f.name, f.start, f.end, f.conn, f.q
	ctx := context.Background()
	aq := docflow.AnalyticsQuery{From: start.Add(7 * time.Minute), To: end.Add(-23 * time.Minute), Interval: 2 * time.Hour}
	first, err := q.Steps(ctx, aq)
	if err != nil {
		t.Fatal(err)
	}
	if n := conn.hist.Load(); n == 0 {
		t.Fatal("the first report read no histograms")
	}
	conn.hist.Store(0)
	conn.all.Store(0)
	again, err := q.Steps(ctx, aq)
	if err != nil {
		t.Fatal(err)
	}
	// Only the counts of its two edge buckets, partial.
	if n, all := conn.hist.Load(), conn.all.Load(); n != 0 || all != 1 {
		t.Errorf("the same report again read histograms %d times and ran %d queries, want 0 and 1", n, all)
	}
	if !reflect.DeepEqual(first, again) {
		t.Errorf("the same report again answered differently:\n%+v\n%+v", first, again)
	}

	// A window moved by seven minutes: its new edge minutes only (one
	// query per percentile call: durations and queue waits).
	conn.hist.Store(0)
	moved := aq
	moved.From, moved.To = aq.From.Add(7*time.Minute), aq.To.Add(7*time.Minute)
	if _, err := q.Steps(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if n := conn.hist.Load(); n > 2 {
		t.Errorf("a moved window read histograms %d times, want at most 2", n)
	}
	// Its answer is the one a process with nothing kept gives.
	fresh := freshQueries(t, name)
	got, err := q.Steps(ctx, moved)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fresh.Steps(ctx, moved)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kept histograms answer\n%+v\nwant\n%+v", got.Totals, want.Totals)
	}

	// The recorder's own queries, then rows written into the same closed
	// buckets: the next report counts them in its percentiles too.
	before, err := rec.Steps(ctx, aq)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		rec.Record(docflow.Metric{Kind: docflow.MetricStep, Time: start.Add(time.Hour + time.Duration(i)*time.Minute), StepType: "ocr",
			Pipeline: "p", Status: docflow.StepSucceeded, Duration: 30 * time.Second, QueueWait: 20 * time.Second})
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := rec.Steps(ctx, aq)
	if err != nil {
		t.Fatal(err)
	}
	b, a := before.Totals.Steps[0], after.Totals.Steps[0]
	if a.Count != b.Count+400 {
		t.Errorf("count after late rows %d, want %d", a.Count, b.Count+400)
	}
	if a.Percentiles.P99 <= b.Percentiles.P99 || a.QueueWait.P99 <= b.QueueWait.P99 {
		t.Errorf("p99 after late rows of 30 s: %v (wait %v), before %v (wait %v): the kept histograms were read",
			a.Percentiles.P99, a.QueueWait.P99, b.Percentiles.P99, b.QueueWait.P99)
	}
	fresh2 := freshQueries(t, name)
	want2, err := fresh2.Steps(ctx, aq)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after.Totals, want2.Totals) {
		t.Errorf("after late rows the recorder answers\n%+v\nwant\n%+v", after.Totals, want2.Totals)
	}
}

// TestScatteredBucketsKept: a window whose kept buckets lie scattered
// (every other one, from earlier one-bucket reports) reads what it lacks
// in one query and answers as a process with nothing kept does.
func TestScatteredBucketsKept(t *testing.T) {
	f := newKeptFixture(t, 2000)
	name, start, end, conn, q := f.name, f.start, f.end, f.conn, f.q
	ctx := context.Background()
	const step = 30 * time.Minute
	for at := start; at.Before(end); at = at.Add(2 * step) {
		if _, err := q.Errors(ctx, docflow.AnalyticsQuery{From: at, To: at.Add(step), Interval: step}); err != nil {
			t.Fatal(err)
		}
	}
	conn.all.Store(0)
	whole := docflow.AnalyticsQuery{From: start, To: end, Interval: step}
	got, err := q.Errors(ctx, whole)
	if err != nil {
		t.Fatal(err)
	}
	if n := conn.all.Load(); n > 3 {
		t.Errorf("a window of 48 scattered missing buckets ran %d queries", n)
	}
	fresh := freshQueries(t, name)
	want, err := fresh.Errors(ctx, whole)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scattered kept buckets answer\n%+v\nwant\n%+v", got, want)
	}
}

// freshQueries are the queries of a process that has kept nothing.
func freshQueries(t *testing.T, name string) clickhouse.Queries {
	t.Helper()
	q, err := clickhouse.NewQueries(srv.conn, name)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// keptFixture is a database holding n step metrics spread over the two
// days before yesterday, and queries over it through a counting
// connection.
type keptFixture struct {
	rec        *clickhouse.Recorder
	name       string
	start, end time.Time
	conn       *countingConn
	q          clickhouse.Queries
}

func newKeptFixture(t *testing.T, n int) keptFixture {
	t.Helper()
	if srv.skip != "" {
		t.Skipf("no ClickHouse: %s", srv.skip)
	}
	f := keptFixture{conn: &countingConn{Conn: srv.conn}}
	f.rec, f.name = open(t, srv.addr, analytics.Options{FlushInterval: time.Hour})
	f.end = time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	f.start = f.end.Add(-48 * time.Hour)
	recordSteps(t, f.rec, f.start, 48*time.Hour, n)
	var err error
	if f.q, err = clickhouse.NewQueries(f.conn, f.name); err != nil {
		t.Fatal(err)
	}
	return f
}
