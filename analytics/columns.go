package analytics

import (
	"strings"
	"time"
	"unicode/utf8"

	"docflow"
)

// column is one stored metric column: its name, its ClickHouse and
// PostgreSQL types, and how its value comes from a Metric: exactly one of
// the typed getters is set (none: the column is the metric's time).
type column struct {
	name, chType, pgType string

	s   func(m *docflow.Metric) string
	i64 func(m *docflow.Metric) int64
	i32 func(m *docflow.Metric) int64 // clamped to int32
	f64 func(m *docflow.Metric) float64
}

// value is the column's value for one row, as Values gives it.
func (c column) value(m *docflow.Metric) any {
	switch {
	case c.s != nil:
		return clean(c.s(m))
	case c.i64 != nil:
		return c.i64(m)
	case c.i32 != nil:
		return clamp32(c.i32(m))
	case c.f64 != nil:
		return c.f64(m)
	}
	return m.Time.UTC()
}

func strCol(name string, f func(m *docflow.Metric) string) column {
	return column{name: name, chType: "String", pgType: "text", s: f}
}

func int64Col(name string, f func(m *docflow.Metric) int64) column {
	return column{name: name, chType: "Int64", pgType: "bigint", i64: f}
}

func int32Col(name string, f func(m *docflow.Metric) int64) column {
	return column{name: name, chType: "Int32", pgType: "int", i32: f}
}

func floatCol(name string, f func(m *docflow.Metric) float64) column {
	return column{name: name, chType: "Float64", pgType: "double precision", f64: f}
}

// columns is the one definition of the stored row, in order. Both stores
// name these columns in every INSERT or COPY. Ints are int32 or int64 and
// durations float64 milliseconds: the Go types both drivers accept for the
// declared types.
var columns = []column{
	strCol("kind", func(m *docflow.Metric) string { return m.Kind }),
	{name: "ts", chType: "DateTime", pgType: "timestamptz"},
	int64Col("file_id", func(m *docflow.Metric) int64 { return m.FileID }),
	strCol("run_id", func(m *docflow.Metric) string { return m.RunID }),
	strCol("step_type", func(m *docflow.Metric) string { return m.StepType }),
	strCol("status", func(m *docflow.Metric) string { return m.Status }),
	int32Col("attempt", func(m *docflow.Metric) int64 { return int64(m.Attempt) }),
	floatCol("duration_ms", func(m *docflow.Metric) float64 { return DurationMillis(m.Duration) }),
	int64Col("bytes", func(m *docflow.Metric) int64 { return m.Bytes }),
	strCol("error_class", func(m *docflow.Metric) string { return m.ErrorClass }),
	strCol("channel", func(m *docflow.Metric) string { return m.Channel }),
	strCol("method", func(m *docflow.Metric) string { return m.Method }),
	strCol("route", func(m *docflow.Metric) string { return m.Route }),
	int32Col("http_status", func(m *docflow.Metric) int64 { return int64(m.HTTPStatus) }),
	strCol("owner_id", func(m *docflow.Metric) string { return m.OwnerID }),
	strCol("pipeline", func(m *docflow.Metric) string { return m.Pipeline }),
	strCol("worker", func(m *docflow.Metric) string { return m.Worker }),
	floatCol("queue_wait_ms", func(m *docflow.Metric) float64 { return DurationMillis(m.QueueWait) }),
	int64Col("bytes_in", func(m *docflow.Metric) int64 { return m.BytesIn }),
	strCol("type", func(m *docflow.Metric) string { return m.Type }),
	strCol("direction", func(m *docflow.Metric) string { return m.Direction }),
	strCol("target", func(m *docflow.Metric) string { return m.Target }),
	strCol("topic", func(m *docflow.Metric) string { return m.Topic }),
	int32Col("topic_partition", func(m *docflow.Metric) int64 { return int64(m.Partition) }),
	int64Col("lag", func(m *docflow.Metric) int64 { return m.Lag }),
	strCol("process", func(m *docflow.Metric) string { return m.Process }),
	floatCol("cpu", func(m *docflow.Metric) float64 { return m.CPU }),
	int64Col("rss", func(m *docflow.Metric) int64 { return m.RSS }),
	int64Col("goroutines", func(m *docflow.Metric) int64 { return int64(m.Goroutines) }),
	int64Col("dropped", func(m *docflow.Metric) int64 { return m.Dropped }),
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
	// Nearly every value is short ASCII: one pass over its bytes.
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0 || c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii || utf8.ValidString(s) && !strings.Contains(s, "\x00") {
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
