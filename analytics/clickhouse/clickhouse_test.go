package clickhouse_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"docflow"
	"docflow/analytics"
	"docflow/analytics/analyticstest"
	"docflow/analytics/clickhouse"
)

// server is the ClickHouse the tests use, found (or started) once in TestMain.
type server struct {
	addr    string // host:port
	conn    driver.Conn
	prefix  string // of this run's databases
	created atomic.Int64
	skip    string // why the tests cannot run
}

var srv server

func testURL() string {
	if u := os.Getenv("CLICKHOUSE_TEST_URL"); u != "" {
		return u
	}
	return "clickhouse://127.0.0.1:19000"
}

func TestMain(m *testing.M) {
	if err := connect(); err != nil {
		srv.skip = err.Error()
		fmt.Fprintln(os.Stderr, "clickhouse tests will skip:", srv.skip)
	}
	code := m.Run()
	if srv.conn != nil {
		dropDatabases()
		srv.conn.Close()
	}
	os.Exit(code)
}

func connect() error {
	opts, _, err := clickhouse.ParseURL(clickhouse.Config{URL: testURL(), ReadTimeout: 10 * time.Second, DialTimeout: 2 * time.Second})
	if err != nil {
		return err
	}
	if len(opts.Addr) == 0 {
		return fmt.Errorf("no address in %s", testURL())
	}
	srv.addr = opts.Addr[0]
	if err := ping(opts); err != nil {
		// Nothing answers: start the private server once, then try again.
		script, _ := filepath.Abs("../../scripts/clickhouse.sh")
		cmd := exec.Command(script)
		if _, port, err := net.SplitHostPort(srv.addr); err == nil {
			cmd.Env = append(os.Environ(), "CLICKHOUSE_TCP_PORT="+port)
		}
		out, serr := cmd.CombinedOutput()
		if serr != nil {
			return fmt.Errorf("%s: %v (%s): %v", testURL(), err, strings.TrimSpace(string(out)), serr)
		}
		if err := ping(opts); err != nil {
			return fmt.Errorf("%s after %s: %w", testURL(), script, err)
		}
	}
	conn, err := ch.Open(opts)
	if err != nil {
		return err
	}
	srv.conn = conn
	b := make([]byte, 4)
	rand.Read(b)
	srv.prefix = "docflow_test_analytics_" + hex.EncodeToString(b)
	return nil
}

func ping(opts *ch.Options) error {
	conn, err := ch.Open(opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return conn.Ping(ctx)
}

func dropDatabases() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := int64(1); i <= srv.created.Load(); i++ {
		name := fmt.Sprintf("%s_%d", srv.prefix, i)
		if err := srv.conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			fmt.Fprintf(os.Stderr, "drop %s: %v\n", name, err)
		}
	}
}

// database names a fresh database for one test; Open creates it.
func database(t *testing.T) string {
	t.Helper()
	if srv.skip != "" {
		t.Skipf("no ClickHouse: %s", srv.skip)
	}
	return fmt.Sprintf("%s_%d", srv.prefix, srv.created.Add(1))
}

// open starts a recorder through addr on a fresh database.
func open(t *testing.T, addr string, opts analytics.Options) (*clickhouse.Recorder, string) {
	t.Helper()
	name := database(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := clickhouse.Open(ctx, clickhouse.Config{URL: "clickhouse://" + addr + "/" + name,
		ReadTimeout: 5 * time.Second, DialTimeout: 2 * time.Second}, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec, name
}

func TestContract(t *testing.T) {
	analyticstest.RunContract(t, func(t *testing.T, opts analytics.Options) analyticstest.Subject {
		if srv.skip != "" {
			t.Skipf("no ClickHouse: %s", srv.skip)
		}
		proxy := analyticstest.NewProxy(t, srv.addr)
		rec, name := open(t, proxy.Addr(), opts)
		return analyticstest.Subject{Recorder: rec, Reader: readBack{srv.conn, name}, Proxy: proxy, IdempotentRetry: true}
	})
}

func TestMigrateIsIdempotent(t *testing.T) {
	rec, name := open(t, srv.addr, analytics.Options{})
	_ = rec
	ctx := context.Background()
	if err := clickhouse.Migrate(ctx, srv.conn, name); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	var engine, key string
	if err := srv.conn.QueryRow(ctx, "SELECT engine, partition_key FROM system.tables WHERE database = ? AND name = 'events'", name).Scan(&engine, &key); err != nil {
		t.Fatal(err)
	}
	if engine != "MergeTree" || key != "toYYYYMMDD(ts)" {
		t.Fatalf("events table: engine %q, partition key %q", engine, key)
	}
	ms, err := clickhouse.Migrations(name)
	if err != nil {
		t.Fatal(err)
	}
	var n, distinct uint64
	if err := srv.conn.QueryRow(ctx, "SELECT count(), uniqExact(version) FROM "+name+".schema_migrations").Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if int(n) != len(ms) || n != distinct {
		t.Fatalf("schema_migrations holds %d rows (%d versions), want %d: each applied once", n, distinct, len(ms))
	}
	for table := range clickhouse.DataTables {
		var pk string
		if err := srv.conn.QueryRow(ctx, "SELECT partition_key FROM system.tables WHERE database = ? AND name = ?", name, table).Scan(&pk); err != nil {
			t.Fatalf("table %s: %v", table, err)
		}
		want := "toYYYYMMDD(" // by day, for retention
		if table == "pct" || table == "pct2" || strings.HasSuffix(table, "_coarse") {
			want = "toYYYYMM(" // small: by month, dropped whole
		}
		if !strings.HasPrefix(pk, want) {
			t.Errorf("table %s partitioned by %q, want %s…)", table, pk, want)
		}
	}
}

// TestEveryColumnStored reads one row back whole: the queries only see some
// columns. ts keeps whole seconds (DateTime).
func TestEveryColumnStored(t *testing.T) {
	rec, name := open(t, srv.addr, analytics.Options{FlushInterval: time.Hour})
	ts := time.Date(2026, 3, 1, 12, 30, 45, 0, time.UTC)
	in := docflow.Metric{Kind: docflow.MetricStep, Time: ts, FileID: 42, RunID: "run-1", StepType: "ocr",
		Pipeline: "default", Worker: "w1", Status: "failed", Attempt: 3, Duration: 1234567 * time.Microsecond,
		QueueWait: 250 * time.Millisecond, BytesIn: 7, Bytes: 9000, ErrorClass: "tool_missing",
		Channel: "imap", Type: "application/pdf", Direction: "out", Target: "hook-1", Method: "POST",
		Route: "/api/files/{id}", HTTPStatus: 503, OwnerID: "user-7", Topic: "steps.ocr", Partition: 2, Lag: 11,
		Process: "host:1", CPU: 12.5, RSS: 1 << 20, Goroutines: 33, Dropped: 4}
	rec.Record(in)
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	stored := storedRows(t, name+".events")
	if len(stored) == 0 {
		t.Fatal("no row stored")
	}
	want, got := analytics.Values(in), stored[0]
	for i, col := range analytics.Columns() {
		if g := got[i]; !reflect.DeepEqual(g, want[i]) {
			t.Errorf("column %s read back %v, want %v", col, g, want[i])
		}
	}
}

// storedRows reads every metric column of the rows of from (a table,
// with an ORDER BY when the order matters), each value of the Go type
// analytics.Values gives and times in UTC.
func storedRows(t *testing.T, from string) [][]any {
	t.Helper()
	rows, err := srv.conn.Query(context.Background(), "SELECT "+analytics.ColumnList+" FROM "+from)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	types := analytics.Values(docflow.Metric{})
	var out [][]any
	for rows.Next() {
		row := make([]any, len(types))
		for i, v := range types {
			row[i] = reflect.New(reflect.TypeOf(v)).Interface()
		}
		if err := rows.Scan(row...); err != nil {
			t.Fatal(err)
		}
		for i := range row {
			row[i] = reflect.ValueOf(row[i]).Elem().Interface()
			if tm, ok := row[i].(time.Time); ok {
				row[i] = tm.UTC()
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSparseBatchesStored: a batch names only the columns its rows set
// (the others take their zero in the store): rows of one kind, of another
// and of both read back exactly as Values gives them, and the rollups see
// them as they see full rows.
func TestSparseBatchesStored(t *testing.T) {
	rec, name := open(t, srv.addr, analytics.Options{FlushInterval: time.Hour})
	ts := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	step := docflow.Metric{Kind: docflow.MetricStep, Time: ts, FileID: 1, StepType: "ocr", Status: docflow.StepSucceeded,
		Attempt: 1, Duration: 40 * time.Millisecond}
	req := docflow.Metric{Kind: docflow.MetricRequest, Time: ts.Add(time.Second), Method: "GET", Route: "/api/files",
		HTTPStatus: 200, Duration: 3 * time.Millisecond}
	batches := [][]docflow.Metric{{step}, {req}, {step, req}}
	for _, b := range batches {
		for _, m := range b {
			rec.Record(m)
		}
		if err := rec.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	got := storedRows(t, name+".events ORDER BY kind, ts")
	// ORDER BY kind, ts: the request rows come first.
	want := [][]any{analytics.Values(req), analytics.Values(req), analytics.Values(step), analytics.Values(step)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stored rows\n%v\nwant\n%v", got, want)
	}
	stats, err := readBack{srv.conn, name}.StepStats(context.Background(), ts.Add(-time.Hour), ts.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 || stats[0].Count != 2 {
		t.Fatalf("step stats from the rollups %+v, want the two ocr attempts", stats)
	}
}

func TestParseURL(t *testing.T) {
	opts, db, err := clickhouse.ParseURL(clickhouse.Config{URL: "clickhouse://127.0.0.1:19000"})
	if err != nil || db != clickhouse.DefaultDatabase || opts.Auth.Database != "" || opts.ReadTimeout != clickhouse.DefaultReadTimeout {
		t.Fatalf("ParseURL without a database: %+v, %q, %v", opts, db, err)
	}
	opts, db, err = clickhouse.ParseURL(clickhouse.Config{URL: "clickhouse://u:p@h:9000/analytics", ReadTimeout: time.Second})
	if err != nil || db != "analytics" || opts.Auth.Username != "u" || opts.ReadTimeout != time.Second || opts.Addr[0] != "h:9000" {
		t.Fatalf("ParseURL: %+v, %q, %v", opts, db, err)
	}
	for _, bad := range []string{"clickhouse://h:9000/x;DROP", "http://h:8123/docflow", "::"} {
		if _, _, err := clickhouse.ParseURL(clickhouse.Config{URL: bad}); err == nil {
			t.Errorf("ParseURL(%q) succeeded", bad)
		}
	}
}

// CLICKHOUSE_USER and CLICKHOUSE_PASSWORD reach the connection through
// Config and win over the URL's.
func TestParseURLCredentials(t *testing.T) {
	opts, _, err := clickhouse.ParseURL(clickhouse.Config{URL: "clickhouse://u:p@h:9000/docflow", User: "reader", Password: "s3cret"})
	if err != nil || opts.Auth.Username != "reader" || opts.Auth.Password != "s3cret" {
		t.Fatalf("ParseURL with User and Password: %+v, %v", opts.Auth, err)
	}
	opts, _, err = clickhouse.ParseURL(clickhouse.Config{URL: "clickhouse://u:p@h:9000/docflow"})
	if err != nil || opts.Auth.Username != "u" || opts.Auth.Password != "p" {
		t.Fatalf("ParseURL keeps the URL's credentials when none are given: %+v, %v", opts.Auth, err)
	}
}

// A wrong CLICKHOUSE_PASSWORD is refused by the server at Open.
func TestOpenWithWrongPassword(t *testing.T) {
	if srv.skip != "" {
		t.Skipf("no ClickHouse: %s", srv.skip)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := clickhouse.Open(ctx, clickhouse.Config{URL: testURL(), User: "default", Password: "not-the-password"}, analytics.Options{})
	if err == nil {
		rec.Close()
		t.Fatal("Open with a wrong password succeeded")
	}
}

func TestNewRefusesNil(t *testing.T) {
	if _, err := clickhouse.New(nil, "docflow", analytics.Options{}); err == nil {
		t.Fatal("New(nil) succeeded")
	}
}

// TestOutOfRangeTimesAreClamped stores times DateTime cannot hold at the edge
// of its range instead of failing the batch.
func TestOutOfRangeTimesAreClamped(t *testing.T) {
	rec, name := open(t, srv.addr, analytics.Options{FlushInterval: time.Hour})
	rec.Record(docflow.Metric{Kind: docflow.MetricStep, Time: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), StepType: "ocr"})
	rec.Record(docflow.Metric{Kind: docflow.MetricStep, Time: time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), StepType: "ocr"})
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := rec.Stats(); s.Written != 2 || s.Rejected != 0 {
		t.Fatalf("stats %+v: want both rows written", s)
	}
	var lo, hi time.Time
	if err := srv.conn.QueryRow(context.Background(), "SELECT min(ts), max(ts) FROM "+name+".events").Scan(&lo, &hi); err != nil {
		t.Fatal(err)
	}
	if lo.Unix() != 0 || hi.UTC().Year() != 2105 {
		t.Fatalf("stored times %v and %v, want the edges of the DateTime range", lo, hi)
	}
}

func TestReports(t *testing.T) {
	analyticstest.RunReports(t, func(t *testing.T, opts analytics.Options) analyticstest.Subject {
		return newReportSubject(t, opts)
	})
}

func newReportSubject(t *testing.T, opts analytics.Options) analyticstest.Subject {
	rec, _ := open(t, srv.addr, opts)
	return analyticstest.Subject{Recorder: rec, Reports: rec}
}

// TestSQLOnCurrentEngine runs the chdbcheck package's test (the migrations,
// TTL and every report query on a current ClickHouse, embedded as chDB)
// when libchdb.so is at hand: CHDB_LIB_PATH, or where scripts/chdb.sh puts
// it. Production runs a current ClickHouse; the server tests run on 18.16.
func TestSQLOnCurrentEngine(t *testing.T) {
	lib := os.Getenv("CHDB_LIB_PATH")
	if lib == "" {
		home, _ := os.UserHomeDir()
		found, _ := filepath.Glob(filepath.Join(home, ".cache", "docflow-test-bin", "chdb-*", "libchdb.so"))
		if len(found) == 0 {
			t.Skip("libchdb.so not found (CHDB_LIB_PATH unset, none under ~/.cache/docflow-test-bin/chdb-*): run scripts/chdb.sh to check the SQL on a current ClickHouse")
		}
		lib = found[len(found)-1]
	}
	if testing.Short() {
		t.Skip("-short: the chDB check builds and loads a large library")
	}
	cmd := exec.Command("go", "test", "-tags", "chdb", "-count=1", "-v", "./chdbcheck")
	cmd.Env = append(os.Environ(), "CHDB_LIB_PATH="+lib)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chdbcheck on %s: %v\n%s", lib, err, out)
	}
	t.Logf("%s", out)
}

// TestRetentionDropsOldDays: day partitions before the cutoff go from the
// raw table and every rollup; newer days stay.
func TestRetentionDropsOldDays(t *testing.T) {
	rec, name := open(t, srv.addr, analytics.Options{FlushInterval: time.Hour})
	now := time.Now().UTC()
	old := now.AddDate(0, 0, -100)
	for _, ts := range []time.Time{old, old.Add(time.Hour), now} {
		rec.Record(docflow.Metric{Kind: docflow.MetricStep, Time: ts, StepType: "ocr", Status: docflow.StepSucceeded})
	}
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n, err := clickhouse.DropPartitionsBefore(ctx, srv.conn, name, now.AddDate(0, 0, -90))
	if err != nil {
		t.Fatal(err)
	}
	if n < 3 { // events, steps_1m and steps_1h of the old day
		t.Fatalf("dropped %d partitions, want the old day of events and its rollups", n)
	}
	for _, table := range []string{"events", "steps_1m", "steps_1h"} {
		var days uint64
		if err := srv.conn.QueryRow(ctx, "SELECT uniqExact(partition) FROM system.parts WHERE database = ? AND table = ? AND active", name, table).Scan(&days); err != nil {
			t.Fatal(err)
		}
		if days != 1 {
			t.Errorf("%s keeps %d day partitions, want today's only", table, days)
		}
	}
	if n, err := clickhouse.DropPartitionsBefore(ctx, srv.conn, name, now.AddDate(0, 0, -90)); err != nil || n != 0 {
		t.Fatalf("second run dropped %d (%v), want nothing", n, err)
	}
}
