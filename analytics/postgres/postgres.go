// Package postgres records metrics in PostgreSQL, the default analytics store
// when no ClickHouse is configured. Rows go in with COPY, in batches.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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
		"CREATE INDEX IF NOT EXISTS metrics_kind_ts_idx ON metrics (kind, ts);\n"
}

// Table is the table Schema creates and the recorder writes.
const Table = "metrics"

// Recorder batches metrics into the metrics table and answers the dashboard
// queries. It does not own the pool: close the pool after the Recorder.
type Recorder struct {
	*analytics.Recorder
	Queries
}

var (
	_ docflow.Recorder    = (*Recorder)(nil)
	_ docflow.MetricStats = (*Recorder)(nil)
)

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

// WriteMetrics copies rows in one COPY, which commits all or nothing.
func (w writer) WriteMetrics(ctx context.Context, rows []docflow.Metric) error {
	n, err := w.pool.CopyFrom(ctx, pgx.Identifier{Table}, analytics.Columns(),
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			return analytics.Values(rows[i]), nil
		}))
	if err != nil {
		// A data exception (class 22) or constraint violation (class 23)
		// comes back for the same rows every time: let the batcher isolate
		// them. Anything else (connection, missing table) may pass.
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23")) {
			err = analytics.Permanent(err)
		}
		return fmt.Errorf("copy metrics: %w", err)
	}
	if n != int64(len(rows)) {
		return fmt.Errorf("copy metrics: copied %d of %d rows", n, len(rows))
	}
	return nil
}

func (w writer) Ping(ctx context.Context) error { return w.pool.Ping(ctx) }

// Queries answers the dashboard queries from the metrics table; it needs no
// Recorder, so API processes can use it alone.
type Queries struct{ pool *pgxpool.Pool }

var _ docflow.MetricStats = Queries{}

// NewQueries returns Queries over pool.
func NewQueries(pool *pgxpool.Pool) (Queries, error) {
	if pool == nil {
		return Queries{}, errors.New("postgres metric queries: nil pool")
	}
	return Queries{pool: pool}, nil
}

// NOTE: ORDER BY … COLLATE "C" sorts bytewise, as ClickHouse does, so both
// stores return rows in the same order whatever the database's collation.

// StepStats counts step attempts per step type in [from, to).
func (q Queries) StepStats(ctx context.Context, from, to time.Time) ([]docflow.StepStat, error) {
	rows, err := q.pool.Query(ctx, `
SELECT step_type, count(*), count(*) FILTER (WHERE status = 'failed'), avg(duration_ms)
FROM metrics
WHERE kind = $1 AND ts >= $2 AND ts < $3
GROUP BY step_type
ORDER BY step_type COLLATE "C"`, docflow.MetricStep, from, to)
	if err != nil {
		return nil, fmt.Errorf("query step stats: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (docflow.StepStat, error) {
		var s docflow.StepStat
		var avg float64
		err := r.Scan(&s.StepType, &s.Count, &s.Failed, &avg)
		s.AvgDuration = analytics.MillisDuration(avg)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("read step stats: %w", err)
	}
	return out, nil
}

// RequestStats counts HTTP requests per method, route and status in [from, to).
func (q Queries) RequestStats(ctx context.Context, from, to time.Time) ([]docflow.RequestStat, error) {
	rows, err := q.pool.Query(ctx, `
SELECT method, route, http_status, count(*), avg(duration_ms)
FROM metrics
WHERE kind = $1 AND ts >= $2 AND ts < $3
GROUP BY method, route, http_status
ORDER BY route COLLATE "C", method COLLATE "C", http_status`, docflow.MetricRequest, from, to)
	if err != nil {
		return nil, fmt.Errorf("query request stats: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (docflow.RequestStat, error) {
		var s docflow.RequestStat
		var status int32
		var avg float64
		err := r.Scan(&s.Method, &s.Route, &status, &s.Count, &avg)
		s.HTTPStatus = int(status)
		s.AvgDuration = analytics.MillisDuration(avg)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("read request stats: %w", err)
	}
	return out, nil
}

// IntakeStats counts intakes and their bytes per channel in [from, to).
func (q Queries) IntakeStats(ctx context.Context, from, to time.Time) ([]docflow.IntakeStat, error) {
	rows, err := q.pool.Query(ctx, `
SELECT channel, count(*), sum(bytes)::bigint
FROM metrics
WHERE kind = $1 AND ts >= $2 AND ts < $3
GROUP BY channel
ORDER BY channel COLLATE "C"`, docflow.MetricIntake, from, to)
	if err != nil {
		return nil, fmt.Errorf("query intake stats: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (docflow.IntakeStat, error) {
		var s docflow.IntakeStat
		err := r.Scan(&s.Channel, &s.Count, &s.Bytes)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("read intake stats: %w", err)
	}
	return out, nil
}
