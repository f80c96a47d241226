package analytics

import (
	"strings"
	"time"
	"unicode/utf8"

	"docflow"
)

// column is one stored metric column: its name, its ClickHouse and
// PostgreSQL types, and how its value comes from a Metric.
type column struct {
	name, chType, pgType string
	value                func(m *docflow.Metric) any
}

func str(f func(m *docflow.Metric) string) func(m *docflow.Metric) any {
	return func(m *docflow.Metric) any { return clean(f(m)) }
}

// columns is the one definition of the stored row, in order. Both stores
// name these columns in every INSERT or COPY. Ints are int32 or int64 and
// durations float64 milliseconds: the Go types both drivers accept for the
// declared types.
var columns = []column{
	{"kind", "String", "text", str(func(m *docflow.Metric) string { return m.Kind })},
	{"ts", "DateTime", "timestamptz", func(m *docflow.Metric) any { return m.Time.UTC() }},
	{"file_id", "Int64", "bigint", func(m *docflow.Metric) any { return m.FileID }},
	{"run_id", "String", "text", str(func(m *docflow.Metric) string { return m.RunID })},
	{"step_type", "String", "text", str(func(m *docflow.Metric) string { return m.StepType })},
	{"status", "String", "text", str(func(m *docflow.Metric) string { return m.Status })},
	{"attempt", "Int32", "int", func(m *docflow.Metric) any { return clamp32(int64(m.Attempt)) }},
	{"duration_ms", "Float64", "double precision", func(m *docflow.Metric) any { return DurationMillis(m.Duration) }},
	{"bytes", "Int64", "bigint", func(m *docflow.Metric) any { return m.Bytes }},
	{"error_class", "String", "text", str(func(m *docflow.Metric) string { return m.ErrorClass })},
	{"channel", "String", "text", str(func(m *docflow.Metric) string { return m.Channel })},
	{"method", "String", "text", str(func(m *docflow.Metric) string { return m.Method })},
	{"route", "String", "text", str(func(m *docflow.Metric) string { return m.Route })},
	{"http_status", "Int32", "int", func(m *docflow.Metric) any { return clamp32(int64(m.HTTPStatus)) }},
	{"owner_id", "String", "text", str(func(m *docflow.Metric) string { return m.OwnerID })},
	{"pipeline", "String", "text", str(func(m *docflow.Metric) string { return m.Pipeline })},
	{"worker", "String", "text", str(func(m *docflow.Metric) string { return m.Worker })},
	{"queue_wait_ms", "Float64", "double precision", func(m *docflow.Metric) any { return DurationMillis(m.QueueWait) }},
	{"bytes_in", "Int64", "bigint", func(m *docflow.Metric) any { return m.BytesIn }},
	{"type", "String", "text", str(func(m *docflow.Metric) string { return m.Type })},
	{"direction", "String", "text", str(func(m *docflow.Metric) string { return m.Direction })},
	{"target", "String", "text", str(func(m *docflow.Metric) string { return m.Target })},
	{"topic", "String", "text", str(func(m *docflow.Metric) string { return m.Topic })},
	{"topic_partition", "Int32", "int", func(m *docflow.Metric) any { return clamp32(int64(m.Partition)) }},
	{"lag", "Int64", "bigint", func(m *docflow.Metric) any { return m.Lag }},
	{"process", "String", "text", str(func(m *docflow.Metric) string { return m.Process })},
	{"cpu", "Float64", "double precision", func(m *docflow.Metric) any { return m.CPU }},
	{"rss", "Int64", "bigint", func(m *docflow.Metric) any { return m.RSS }},
	{"goroutines", "Int64", "bigint", func(m *docflow.Metric) any { return int64(m.Goroutines) }},
	{"dropped", "Int64", "bigint", func(m *docflow.Metric) any { return m.Dropped }},
}

// ColumnList names the metric columns, in the order Values returns them.
var ColumnList = strings.Join(Columns(), ", ")

// Columns returns the column names in order (a fresh slice each call).
func Columns() []string {
	out := make([]string, len(columns))
	for i, c := range columns {
		out[i] = c.name
	}
	return out
}

// ColumnDefs returns "name type" lines for a CREATE TABLE, in order, with
// the ClickHouse types (clickhouse true) or the PostgreSQL ones.
func ColumnDefs(clickhouse bool) []string {
	out := make([]string, len(columns))
	for i, c := range columns {
		if clickhouse {
			out[i] = c.name + " " + c.chType
		} else {
			out[i] = c.name + " " + c.pgType
		}
	}
	return out
}

// Values returns m's column values in Columns order, UTC times and strings
// made valid UTF-8 without NUL bytes, which PostgreSQL text refuses.
func Values(m docflow.Metric) []any {
	out := make([]any, len(columns))
	for i, c := range columns {
		out[i] = c.value(&m)
	}
	return out
}

func clamp32(n int64) int32 {
	switch {
	case n > 1<<31-1:
		return 1<<31 - 1
	case n < -1<<31:
		return -1 << 31
	}
	return int32(n)
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
