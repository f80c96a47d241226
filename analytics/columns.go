package analytics

import (
	"strings"
	"time"
	"unicode/utf8"

	"docflow"
)

// ColumnList names the metric columns, in the order Values returns them.
// Both stores use these names, so an INSERT or COPY can name them explicitly.
const ColumnList = "kind, ts, file_id, run_id, step_type, status, attempt, duration_ms, bytes, error_class, channel, method, route, http_status, owner_id"

// Columns returns ColumnList as a slice (a fresh one each call).
func Columns() []string {
	return []string{"kind", "ts", "file_id", "run_id", "step_type", "status", "attempt",
		"duration_ms", "bytes", "error_class", "channel", "method", "route", "http_status", "owner_id"}
}

// Values returns m's column values in Columns order, with the Go types both
// drivers accept for the declared column types (int32 for the int columns,
// float64 milliseconds for the duration, UTC time). Strings are made valid
// UTF-8 without NUL bytes, which PostgreSQL text refuses.
func Values(m docflow.Metric) []any {
	return []any{
		clean(m.Kind),
		m.Time.UTC(),
		m.FileID,
		clean(m.RunID),
		clean(m.StepType),
		clean(m.Status),
		int32(m.Attempt),
		DurationMillis(m.Duration),
		m.Bytes,
		clean(m.ErrorClass),
		clean(m.Channel),
		clean(m.Method),
		clean(m.Route),
		int32(m.HTTPStatus),
		clean(m.OwnerID),
	}
}

func clean(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// DurationMillis converts d to fractional milliseconds, the stored unit.
func DurationMillis(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

// MillisDuration converts stored fractional milliseconds back to a Duration,
// rounded to the microsecond.
func MillisDuration(ms float64) time.Duration {
	return (time.Duration(ms * float64(time.Millisecond))).Round(time.Microsecond)
}
