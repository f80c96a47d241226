//go:build chdb

package chdbcheck

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/chdb-io/chdb-go/chdb"

	"docflow"
	"docflow/analytics"
	"docflow/analytics/clickhouse"
)

// capture is a driver.Conn that records each query and its arguments and
// answers no rows, so a report issues every query it has.
type capture struct {
	driver.Conn
	mu      sync.Mutex // reports run their queries at once
	queries []captured
}

type captured struct {
	sql  string
	args []any
}

func (c *capture) Query(_ context.Context, q string, args ...any) (driver.Rows, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries = append(c.queries, captured{q, args})
	return noRows{}, nil
}

type noRows struct{ driver.Rows }

func (noRows) Next() bool   { return false }
func (noRows) Close() error { return nil }
func (noRows) Err() error   { return nil }

// bind splices args into q's ? placeholders as ClickHouse literals.
func bind(t *testing.T, q string, args []any) string {
	var b strings.Builder
	for _, part := range strings.SplitAfter(q, "?") {
		if !strings.HasSuffix(part, "?") {
			b.WriteString(part)
			continue
		}
		if len(args) == 0 {
			t.Fatalf("more placeholders than arguments in %s", q)
		}
		b.WriteString(strings.TrimSuffix(part, "?"))
		switch v := args[0].(type) {
		case string:
			b.WriteString("'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'")
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		default:
			t.Fatalf("argument %T not handled", v)
		}
		args = args[1:]
	}
	return b.String()
}

func literal(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(x) + "'"
	case time.Time:
		return "toDateTime(" + strconv.FormatInt(x.Unix(), 10) + ")"
	default:
		return fmt.Sprint(x)
	}
}

func TestSQLOnCurrentEngine(t *testing.T) {
	dir := t.TempDir()
	s, err := chdb.NewSession(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(q string) string {
		t.Helper()
		res, err := s.Query(q, "TSV")
		if err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
		if res != nil {
			if err := res.Error(); err != nil {
				t.Fatalf("%v\n%s", err, q)
			}
			return res.String()
		}
		return ""
	}
	t.Logf("engine %s", strings.TrimSpace(run("SELECT version()")))
	const db = "docflow_chdb"
	ddl, err := clickhouse.DDL(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range ddl {
		run(stmt)
	}
	for _, stmt := range clickhouse.TTLStatements(db, 90) {
		run(stmt)
	}
	// Rows of every kind, as the recorder writes them (same columns).
	now := time.Now().UTC().Truncate(time.Second)
	var rows []string
	for i, m := range []docflow.Metric{
		{Kind: docflow.MetricStep, StepType: "ocr", Status: docflow.StepFailed, ErrorClass: "timeout", FileID: 3, Duration: time.Second},
		{Kind: docflow.MetricStep, StepType: "ocr", Status: docflow.StepSucceeded, Duration: 2 * time.Second, QueueWait: time.Second},
		{Kind: docflow.MetricIntake, Channel: "upload", Type: "application/pdf", Status: docflow.IntakeAccepted, Bytes: 5},
		{Kind: docflow.MetricDocument, Status: docflow.StepSucceeded, Duration: 3 * time.Second},
		{Kind: docflow.MetricRequest, Method: "GET", Route: "/api/files", HTTPStatus: 503, Duration: time.Millisecond},
		{Kind: docflow.MetricIntegration, Type: "s3", Direction: "out", Status: docflow.OutcomeOK, Bytes: 7},
		{Kind: docflow.MetricLag, Topic: "steps.ocr", Partition: 1, Lag: 4},
		{Kind: docflow.MetricProcess, Process: "h:1", Worker: "worker", CPU: 3, RSS: 10, Goroutines: 2, Dropped: 1},
	} {
		m.Time = now.Add(time.Duration(-i) * time.Second)
		var vals []string
		for _, v := range analytics.Values(m) {
			vals = append(vals, literal(v))
		}
		rows = append(rows, "("+strings.Join(vals, ", ")+")")
	}
	run("INSERT INTO " + db + ".events (" + analytics.ColumnList + ") VALUES " + strings.Join(rows, ", "))

	// pct2's views (0006's, pct's before, and 0007's 5 and 30-minute
	// one) make rows per grain (5) and measured duration (steps two, four
	// other kinds one): 5 × 6.
	if n := strings.TrimSpace(run("SELECT count() FROM (SELECT DISTINCT grain, metric FROM " + db + ".pct2)")); n != "30" {
		t.Errorf("pct2 holds %s grains and metrics, want 30", n)
	}
	// The reports read pct2's states as their serialized bytes (hist.go's
	// decodeHist): a count of entries, then each value's byte and its
	// weight in 8 bytes, as 18.16 writes them (in any order).
	hexState := strings.TrimSpace(run("SELECT hex(toString(quantilesExactWeightedState(0.5, 0.95, 0.99)(toUInt8(number % 3), toUInt64(1)))) FROM numbers(10)"))
	entries := map[string]bool{}
	if len(hexState) == 2+3*18 && strings.HasPrefix(hexState, "03") {
		for i := 2; i < len(hexState); i += 18 {
			entries[hexState[i:i+18]] = true
		}
	}
	for _, e := range []string{"000400000000000000", "010300000000000000", "020300000000000000"} {
		if !entries[e] {
			t.Errorf("a quantilesExactWeighted state serializes as %s, not as the count and entries decodeHist reads", hexState)
			break
		}
	}

	// The six-hour and day counts (0005), one row of each per key here.
	if n := strings.TrimSpace(run("SELECT count() FROM (SELECT DISTINCT grain FROM " + db + ".steps_coarse)")); n != "2" {
		t.Errorf("steps_coarse holds %s grains, want 2", n)
	}

	c := &capture{}
	q, err := clickhouse.NewQueries(c, db)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// By the minute, by the hour over hours and their edges (the hourly
	// rollups), and by the day.
	for _, aq := range []docflow.AnalyticsQuery{
		{From: now.Add(-time.Hour), To: now.Add(time.Minute), Interval: time.Minute, StepType: "ocr", Channel: "upload"},
		{From: now.Add(-5*time.Hour - 7*time.Minute), To: now.Add(time.Minute), Interval: time.Hour, StepType: "ocr", Channel: "upload"},
		// Days, six hours, hours and raw edges of the percentile rollups.
		{From: now.Add(-50*time.Hour - 7*time.Minute), To: now.Add(time.Minute), Interval: 24 * time.Hour},
		// Six hours (the *_coarse rollups), and two hours (a series whose
		// totals merge its percentiles, with raw edges).
		{From: now.Add(-50*time.Hour - 7*time.Minute), To: now.Add(time.Minute), Interval: 6 * time.Hour},
		{From: now.Add(-50*time.Hour - 7*time.Minute), To: now.Add(time.Minute), Interval: 2 * time.Hour},
		// Thirty minutes: pct2's 30 and 5-minute grains (0007) and raw
		// edges.
		{From: now.Add(-50*time.Hour - 7*time.Minute), To: now.Add(time.Minute), Interval: 30 * time.Minute},
	} {
		for _, f := range []func() error{
			func() error { _, err := q.Overview(ctx, aq); return err },
			func() error { _, err := q.Steps(ctx, aq); return err },
			func() error { _, err := q.Intake(ctx, aq); return err },
			func() error { _, err := q.Errors(ctx, aq); return err },
			func() error { _, err := q.Lag(ctx, aq); return err },
			func() error { _, err := q.Requests(ctx, aq); return err },
			func() error { _, err := q.Integrations(ctx, aq); return err },
		} {
			if err := f(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(c.queries) < 30 {
		t.Fatalf("captured %d queries", len(c.queries))
	}
	empty := 0
	for _, cq := range c.queries {
		if strings.TrimSpace(run(bind(t, cq.sql, cq.args))) == "" {
			empty++
		}
	}
	if empty > len(c.queries)/2 {
		t.Errorf("%d of %d report queries answered nothing over rows of every kind", empty, len(c.queries))
	}
	// Retention's partition listing.
	run("SELECT DISTINCT table, partition FROM system.parts WHERE database = '" + db + "' AND active")
}
