package analytics

import (
	"time"

	"docflow"
)

// Columnar returns rows as whole columns, in Columns order: one typed
// slice per column ([]string, []time.Time, []int64, []int32, []float64,
// the types Values gives one row at a time), for a driver that takes a
// column at once (clickhouse-go's batch column API). Building a column is
// one loop over the rows with no per-value boxing, which is what makes a
// large batch cheap to encode. clock, when set, adjusts each time (a
// store's range); nil keeps them as they are (in UTC).
func Columnar(rows []docflow.Metric, clock func(time.Time) time.Time) []any {
	out := make([]any, len(columns))
	for i, c := range columns {
		out[i] = c.column(rows, clock)
	}
	return out
}

func (c column) column(rows []docflow.Metric, clock func(time.Time) time.Time) any {
	switch {
	case c.s != nil:
		v := make([]string, len(rows))
		for j := range rows {
			v[j] = clean(c.s(&rows[j]))
		}
		return v
	case c.i64 != nil:
		v := make([]int64, len(rows))
		for j := range rows {
			v[j] = c.i64(&rows[j])
		}
		return v
	case c.i32 != nil:
		v := make([]int32, len(rows))
		for j := range rows {
			v[j] = clamp32(c.i32(&rows[j]))
		}
		return v
	case c.f64 != nil:
		v := make([]float64, len(rows))
		for j := range rows {
			v[j] = c.f64(&rows[j])
		}
		return v
	default:
		v := make([]time.Time, len(rows))
		for j := range rows {
			t := rows[j].Time.UTC()
			if clock != nil {
				t = clock(t)
			}
			v[j] = t
		}
		return v
	}
}
