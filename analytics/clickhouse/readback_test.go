package clickhouse_test

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"docflow"
	"docflow/analytics"
	"docflow/analytics/analyticstest"
)

// readBack reads database.events back for the contract suite
// (analyticstest.Reader).
type readBack struct {
	conn     driver.Conn
	database string
}

var _ analyticstest.Reader = readBack{}

// window turns [from, to) into whole Unix seconds, the resolution of the ts
// column: from rounds down and to rounds up, so a row stored in the second
// that contains an end of the window counts.
func window(from, to time.Time) (int64, int64) {
	end := to.Unix()
	if to.Nanosecond() > 0 {
		end++
	}
	return from.Unix(), end
}

// StepStats counts step attempts per step type in [from, to).
func (q readBack) StepStats(ctx context.Context, from, to time.Time) ([]analyticstest.StepStat, error) {
	lo, hi := window(from, to)
	rows, err := q.conn.Query(ctx, `
SELECT step_type, count(), countIf(status = 'failed'), avg(duration_ms)
FROM `+q.database+`.events
WHERE kind = ? AND ts >= toDateTime(?) AND ts < toDateTime(?)
GROUP BY step_type
ORDER BY step_type`, docflow.MetricStep, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("query step stats: %w", err)
	}
	defer rows.Close()
	out := []analyticstest.StepStat{}
	for rows.Next() {
		var s analyticstest.StepStat
		var count, failed uint64
		var avg float64
		if err := rows.Scan(&s.StepType, &count, &failed, &avg); err != nil {
			return nil, fmt.Errorf("read step stats: %w", err)
		}
		s.Count, s.Failed, s.AvgDuration = toInt64(count), toInt64(failed), analytics.MillisDuration(avg)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read step stats: %w", err)
	}
	return out, nil
}

// RequestStats counts HTTP requests per method, route and status in [from, to).
func (q readBack) RequestStats(ctx context.Context, from, to time.Time) ([]analyticstest.RequestStat, error) {
	lo, hi := window(from, to)
	rows, err := q.conn.Query(ctx, `
SELECT method, route, http_status, count(), avg(duration_ms)
FROM `+q.database+`.events
WHERE kind = ? AND ts >= toDateTime(?) AND ts < toDateTime(?)
GROUP BY method, route, http_status
ORDER BY route, method, http_status`, docflow.MetricRequest, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("query request stats: %w", err)
	}
	defer rows.Close()
	out := []analyticstest.RequestStat{}
	for rows.Next() {
		var s analyticstest.RequestStat
		var status int32
		var count uint64
		var avg float64
		if err := rows.Scan(&s.Method, &s.Route, &status, &count, &avg); err != nil {
			return nil, fmt.Errorf("read request stats: %w", err)
		}
		s.HTTPStatus, s.Count, s.AvgDuration = int(status), toInt64(count), analytics.MillisDuration(avg)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read request stats: %w", err)
	}
	return out, nil
}

// IntakeStats counts intakes and their bytes per channel in [from, to).
func (q readBack) IntakeStats(ctx context.Context, from, to time.Time) ([]analyticstest.IntakeStat, error) {
	lo, hi := window(from, to)
	rows, err := q.conn.Query(ctx, `
SELECT channel, count(), sum(bytes)
FROM `+q.database+`.events
WHERE kind = ? AND ts >= toDateTime(?) AND ts < toDateTime(?)
GROUP BY channel
ORDER BY channel`, docflow.MetricIntake, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("query intake stats: %w", err)
	}
	defer rows.Close()
	out := []analyticstest.IntakeStat{}
	for rows.Next() {
		var s analyticstest.IntakeStat
		var count uint64
		if err := rows.Scan(&s.Channel, &count, &s.Bytes); err != nil {
			return nil, fmt.Errorf("read intake stats: %w", err)
		}
		s.Count = toInt64(count)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read intake stats: %w", err)
	}
	return out, nil
}

func toInt64(n uint64) int64 {
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}
