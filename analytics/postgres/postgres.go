// Package postgres records metrics in PostgreSQL, the default analytics store
// when no ClickHouse is configured: the metrics table, each batch written
// with its token in metric_batches in one statement (a retried batch that
// had landed is stored once), reports by query (reports.go) and retention
// by batched deletes (retention.go).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"docflow"
	"docflow/analytics"
)

// Schema creates the metrics table and its indexes. The project's
// migrations (0001_schema, 0450_metrics_events) build the same table; tests
// run Schema on a fresh database.
//
// NOTE: every column but kind and ts has a zero default rather than NULL,
// matching the ClickHouse table (which has no Nullable columns), so the same
// queries mean the same thing on both stores.
var Schema = schema()

func schema() string {
	defs := analytics.ColumnDefs(false)
	for i, d := range defs {
		switch {
		case i < 2: // kind, ts
			defs[i] = d + " NOT NULL"
		case strings.HasSuffix(d, " text"):
			defs[i] = d + " NOT NULL DEFAULT ''"
		default:
			defs[i] = d + " NOT NULL DEFAULT 0"
		}
	}
	return "CREATE TABLE IF NOT EXISTS metrics (\n    " + strings.Join(defs, ",\n    ") + "\n);\n" +
		"CREATE INDEX IF NOT EXISTS metrics_ts_idx ON metrics (ts);\n" +
		"CREATE INDEX IF NOT EXISTS metrics_kind_ts_idx ON metrics (kind, ts);\n" + batchesSchema
}

// batchesSchema is the table of written batches' tokens (WriteMetrics),
// kept a day (DeleteBefore); migration 0530 creates the same.
const batchesSchema = `CREATE TABLE IF NOT EXISTS metric_batches (
    token TEXT PRIMARY KEY,
    written_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS metric_batches_written_at ON metric_batches (written_at);
`

// Table is the table Schema creates and the recorder writes.
const Table = "metrics"

// Recorder batches metrics into the metrics table and answers the dashboard
// queries. It does not own the pool: close the pool after the Recorder.
type Recorder struct {
	*analytics.Recorder
	Queries
}

var _ docflow.Recorder = (*Recorder)(nil)

// New starts a Recorder writing to pool's metrics table (which Schema
// creates); Close stops it.
func New(pool *pgxpool.Pool, opts analytics.Options) (*Recorder, error) {
	if pool == nil {
		return nil, errors.New("postgres recorder: nil pool")
	}
	rec, err := analytics.NewRecorder(writer{pool}, opts)
	if err != nil {
		return nil, fmt.Errorf("postgres recorder: %w", err)
	}
	return &Recorder{Recorder: rec, Queries: Queries{pool: pool}}, nil
}

// writer is the analytics.Store over a pool.
type writer struct{ pool *pgxpool.Pool }

// WriteMetrics writes rows in one statement, which commits all or nothing.
//
// Inside a Batcher's write (analytics.BatchToken) the same statement
// records the batch's token in metric_batches, whose primary key makes a
// retry of a batch that had landed (its answer lost to a timeout) fail
// with a unique violation, which is reported as success: the rows are
// stored once. A retry racing the first attempt's commit waits for it on
// the key, so the two can never both land.
//
// NOTE: one INSERT … SELECT FROM unnest of one array per column (binary
// arrays: the statement is prepared once per connection), rather than
// COPY: COPY waits for the server between its steps, and would have to run
// in a transaction with the token's insert, so a lost answer could leave
// the client not knowing at four points instead of one. It is somewhat
// slower than COPY (docs/benchmarks.md, "Analytics recording").
func (w writer) WriteMetrics(ctx context.Context, rows []docflow.Metric) error {
	args := append(make([]any, 0, len(insertCols)+1), columnArrays(rows)...)
	sql := insertRows
	if token, _, ok := analytics.BatchToken(ctx); ok {
		sql = insertBatch
		args = append(args, token)
	}
	tag, err := w.pool.Exec(ctx, sql, args...)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "metric_batches_pkey" {
			return nil // this batch is stored already
		}
		// A data exception (class 22) or constraint violation (class 23)
		// comes back for the same rows every time: let the batcher isolate
		// them. Anything else (connection, missing table) may pass.
		if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23")) {
			err = analytics.Permanent(err)
		}
		return fmt.Errorf("insert metrics: %w", err)
	}
	if n := tag.RowsAffected(); n != int64(len(rows)) {
		return fmt.Errorf("insert metrics: wrote %d of %d rows", n, len(rows))
	}
	return nil
}

// insertCols are the metric columns with their PostgreSQL types, in order.
var insertCols = analytics.ColumnDefs(false)

// insertRows inserts the rows given as one array per column ($1…$n, in
// Columns order); insertBatch also records the batch token $n+1.
var insertRows, insertBatch = func() (string, string) {
	arrays := make([]string, len(insertCols))
	for i, def := range insertCols {
		typ := def[strings.IndexByte(def, ' ')+1:]
		arrays[i] = fmt.Sprintf("$%d::%s[]", i+1, typ)
	}
	ins := "INSERT INTO " + Table + " (" + analytics.ColumnList + ") SELECT * FROM unnest(" + strings.Join(arrays, ", ") + ")"
	batch := fmt.Sprintf("WITH batch AS (INSERT INTO metric_batches (token) VALUES ($%d)) ", len(insertCols)+1) + ins
	return ins, batch
}()

// columnArrays turns rows into one typed slice per column, in Columns
// order, from analytics.Values (which makes the strings storable).
func columnArrays(rows []docflow.Metric) []any {
	out := make([]any, len(insertCols))
	for _, m := range rows {
		for i, v := range analytics.Values(m) {
			switch v := v.(type) {
			case string:
				out[i] = appendTo(out[i], v, len(rows))
			case int64:
				out[i] = appendTo(out[i], v, len(rows))
			case int32:
				out[i] = appendTo(out[i], v, len(rows))
			case float64:
				out[i] = appendTo(out[i], v, len(rows))
			case time.Time:
				out[i] = appendTo(out[i], v, len(rows))
			default:
				panic(fmt.Sprintf("metric column %d: unexpected %T", i, v))
			}
		}
	}
	return out
}

// appendTo appends v to the slice held in col (made with capacity n when
// col is still nil).
func appendTo[T any](col any, v T, n int) any {
	s, _ := col.([]T)
	if s == nil {
		s = make([]T, 0, n)
	}
	return append(s, v)
}

func (w writer) Ping(ctx context.Context) error { return w.pool.Ping(ctx) }

// Queries answers the dashboard queries from the metrics table; it needs no
// Recorder, so API processes can use it alone.
type Queries struct{ pool *pgxpool.Pool }

// NewQueries returns Queries over pool.
func NewQueries(pool *pgxpool.Pool) (Queries, error) {
	if pool == nil {
		return Queries{}, errors.New("postgres metric queries: nil pool")
	}
	return Queries{pool: pool}, nil
}
