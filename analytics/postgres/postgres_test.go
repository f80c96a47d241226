package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"docflow"
	"docflow/analytics"
	"docflow/analytics/analyticstest"
	"docflow/analytics/postgres"
	storepg "docflow/storage/postgres"
)

// serverURL names the maintenance database of the server tests create a
// throwaway database on.
func serverURL() string {
	if u := os.Getenv("DOCFLOW_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// testDB is the database of this test run, dropped when it ends.
type testDB struct {
	cfg     *pgxpool.Config // connects to the test database
	schemas atomic.Int64
	skip    string // why the tests cannot run
}

var db testDB

func TestMain(m *testing.M) {
	drop, err := setup()
	if err != nil {
		db.skip = err.Error()
	}
	code := m.Run()
	if drop != nil {
		drop()
	}
	os.Exit(code)
}

func setup() (drop func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, serverURL())
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL at %s: %w", serverURL(), err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	name := "docflow_test_analytics_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create test database: %w", err)
	}
	drop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, serverURL())
		if err != nil {
			fmt.Fprintf(os.Stderr, "drop %s: %v\n", name, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "drop %s: %v\n", name, err)
		}
	}
	cfg, err := pgxpool.ParseConfig(serverURL())
	if err != nil {
		drop()
		return nil, fmt.Errorf("parse %s: %w", serverURL(), err)
	}
	cfg.ConnConfig.Database = name
	db.cfg = cfg
	return drop, nil
}

// pool opens a pool on a fresh schema of the test database, so each test
// sees its own empty metrics table.
func pool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	if db.skip != "" {
		t.Skipf("no test database: %s", db.skip)
	}
	schema := fmt.Sprintf("t%d", db.schemas.Add(1))
	cfg := db.cfg.Copy()
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	t.Cleanup(p.Close)
	if _, err := p.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	if _, err := p.Exec(ctx, postgres.Schema); err != nil {
		t.Fatalf("run Schema: %v", err)
	}
	return p
}

func TestContract(t *testing.T) {
	analyticstest.RunContract(t, func(t *testing.T, opts analytics.Options) analyticstest.Subject {
		if db.skip != "" {
			t.Skipf("no test database: %s", db.skip)
		}
		direct := pool(t)
		// The recorder's own pool reaches the same schema through a proxy the
		// outage cases can cut; queries use the direct pool.
		proxy := analyticstest.NewProxy(t, net.JoinHostPort(db.cfg.ConnConfig.Host, strconv.Itoa(int(db.cfg.ConnConfig.Port))))
		cfg := direct.Config().Copy()
		host, port, _ := net.SplitHostPort(proxy.Addr())
		p, _ := strconv.Atoi(port)
		cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Fallbacks = host, uint16(p), nil
		viaProxy, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatalf("open pool: %v", err)
		}
		t.Cleanup(viaProxy.Close)
		rec, err := postgres.New(viaProxy, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rec.Close() })
		return analyticstest.Subject{Recorder: rec, Reader: readBack{direct}, Proxy: proxy, IdempotentRetry: true}
	})
}

func TestSchemaIsIdempotent(t *testing.T) {
	p := pool(t)
	if _, err := p.Exec(context.Background(), postgres.Schema); err != nil {
		t.Fatalf("second run of Schema: %v", err)
	}
	var n int
	err := p.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_indexes WHERE tablename = 'metrics' AND schemaname = current_schema()
		 AND indexname IN ('metrics_ts_idx', 'metrics_kind_ts_idx')`).Scan(&n)
	if err != nil || n != 2 {
		t.Fatalf("indexes on metrics: %d, %v; want 2", n, err)
	}
}

// TestEveryColumnStored reads one row back whole: the queries only see some
// columns.
func TestEveryColumnStored(t *testing.T) {
	p := pool(t)
	rec, err := postgres.New(p, analytics.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	ts := time.Date(2026, 3, 1, 12, 30, 45, 123456000, time.UTC)
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
	want := analytics.Values(in)
	got := make([]any, len(want))
	for i, v := range want {
		got[i] = reflect.New(reflect.TypeOf(v)).Interface()
	}
	if err := p.QueryRow(context.Background(), "SELECT "+analytics.ColumnList+" FROM metrics").Scan(got...); err != nil {
		t.Fatal(err)
	}
	for i, col := range analytics.Columns() {
		g := reflect.ValueOf(got[i]).Elem().Interface()
		if tm, ok := g.(time.Time); ok {
			g = tm.UTC()
		}
		if !reflect.DeepEqual(g, want[i]) {
			t.Errorf("column %s read back %v, want %v", col, g, want[i])
		}
	}
}

func TestNewRefusesNil(t *testing.T) {
	if _, err := postgres.New(nil, analytics.Options{}); err == nil {
		t.Fatal("New(nil) succeeded")
	}
	if _, err := postgres.NewQueries(nil); err == nil {
		t.Fatal("NewQueries(nil) succeeded")
	}
}

// TestRejectedRowsAreIsolated: rows the database refuses for good are
// rejected one by one while the rest of their batch is written.
func TestRejectedRowsAreIsolated(t *testing.T) {
	p := pool(t)
	ctx := context.Background()
	if _, err := p.Exec(ctx, "ALTER TABLE metrics ADD CONSTRAINT no_bad_run CHECK (run_id <> 'bad')"); err != nil {
		t.Fatal(err)
	}
	rec, err := postgres.New(p, analytics.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	for i := range 100 {
		run := fmt.Sprint(i)
		if i%40 == 3 {
			run = "bad"
		}
		rec.Record(docflow.Metric{Kind: docflow.MetricStep, StepType: "ocr", RunID: run})
	}
	if err := rec.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if s := rec.Stats(); s.Written != 97 || s.Rejected != 3 || s.Buffered != 0 {
		t.Fatalf("stats %+v: want 97 written, 3 rejected", s)
	}
	var n int
	if err := p.QueryRow(ctx, "SELECT count(*) FROM metrics").Scan(&n); err != nil || n != 97 {
		t.Fatalf("metrics holds %d rows (%v), want 97", n, err)
	}
}

func TestReports(t *testing.T) {
	analyticstest.RunReports(t, func(t *testing.T, opts analytics.Options) analyticstest.Subject {
		return newReportSubject(t, opts)
	})
}

func newReportSubject(t *testing.T, opts analytics.Options) analyticstest.Subject {
	p := pool(t)
	rec, err := postgres.New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return analyticstest.Subject{Recorder: rec, Reports: rec}
}

// TestMigrationsMatchSchema: the project's migrations build the metrics
// table with the columns, types and order Schema gives.
func TestMigrationsMatchSchema(t *testing.T) {
	if db.skip != "" {
		t.Skipf("no test database: %s", db.skip)
	}
	ctx := context.Background()
	migrated, drop, err := storepg.OpenTestDB(ctx, "analytics_schema")
	if err != nil {
		t.Skipf("no migrated test database: %v", err)
	}
	defer drop()
	columns := func(q interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}) []string {
		rows, err := q.Query(ctx, `SELECT column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
FROM information_schema.columns WHERE table_name = 'metrics' AND table_schema = current_schema() ORDER BY ordinal_position`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := columns(pool(t))
	got := columns(migrated.Pool)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("migrated metrics table\n got %q\nwant %q", got, want)
	}
}

func TestDeleteBefore(t *testing.T) {
	p := pool(t)
	rec, err := postgres.New(p, analytics.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	now := time.Now().UTC()
	for _, ts := range []time.Time{now.AddDate(0, 0, -100), now.AddDate(0, 0, -95), now} {
		rec.Record(docflow.Metric{Kind: docflow.MetricStep, Time: ts, StepType: "ocr"})
	}
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, err := postgres.DeleteBefore(context.Background(), p, now.AddDate(0, 0, -90))
	if err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want 2", n, err)
	}
	var left int
	if err := p.QueryRow(context.Background(), "SELECT count(*) FROM metrics").Scan(&left); err != nil || left != 1 {
		t.Fatalf("%d rows left (%v), want 1", left, err)
	}
}
