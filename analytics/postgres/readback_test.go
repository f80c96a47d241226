package postgres_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"docflow"
	"docflow/analytics"
	"docflow/analytics/analyticstest"
)

// readBack reads the metrics table back for the contract suite
// (analyticstest.Reader).
//
// NOTE: ORDER BY … COLLATE "C" sorts bytewise, as ClickHouse does, so both
// stores return rows in the same order whatever the database's collation.
type readBack struct{ pool *pgxpool.Pool }

var _ analyticstest.Reader = readBack{}

// StepStats counts step attempts per step type in [from, to).
func (q readBack) StepStats(ctx context.Context, from, to time.Time) ([]analyticstest.StepStat, error) {
	rows, err := q.pool.Query(ctx, `
SELECT step_type, count(*), count(*) FILTER (WHERE status = 'failed'), avg(duration_ms)
FROM metrics
WHERE kind = $1 AND ts >= $2 AND ts < $3
GROUP BY step_type
ORDER BY step_type COLLATE "C"`, docflow.MetricStep, from, to)
	if err != nil {
		return nil, fmt.Errorf("query step stats: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (analyticstest.StepStat, error) {
		var s analyticstest.StepStat
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
func (q readBack) RequestStats(ctx context.Context, from, to time.Time) ([]analyticstest.RequestStat, error) {
	rows, err := q.pool.Query(ctx, `
SELECT method, route, http_status, count(*), avg(duration_ms)
FROM metrics
WHERE kind = $1 AND ts >= $2 AND ts < $3
GROUP BY method, route, http_status
ORDER BY route COLLATE "C", method COLLATE "C", http_status`, docflow.MetricRequest, from, to)
	if err != nil {
		return nil, fmt.Errorf("query request stats: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (analyticstest.RequestStat, error) {
		var s analyticstest.RequestStat
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
func (q readBack) IntakeStats(ctx context.Context, from, to time.Time) ([]analyticstest.IntakeStat, error) {
	rows, err := q.pool.Query(ctx, `
SELECT channel, count(*), sum(bytes)::bigint
FROM metrics
WHERE kind = $1 AND ts >= $2 AND ts < $3
GROUP BY channel
ORDER BY channel COLLATE "C"`, docflow.MetricIntake, from, to)
	if err != nil {
		return nil, fmt.Errorf("query intake stats: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (analyticstest.IntakeStat, error) {
		var s analyticstest.IntakeStat
		err := r.Scan(&s.Channel, &s.Count, &s.Bytes)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("read intake stats: %w", err)
	}
	return out, nil
}
