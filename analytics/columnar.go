package analytics

import (
	"slices"
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
	return new(ColumnBuffers).Fill(rows, clock)
}

// ColumnBuffers keeps the column slices of one batch for the next, so a
// writer that encodes batch after batch neither allocates a fresh set of
// columns each time nor leaves them for the collector to scan. The zero
// value is ready; it is not safe for concurrent use.
type ColumnBuffers struct{ cols []any }

// Fill is Columnar into c's slices, reusing their memory. The result is
// valid until the next Fill or Reset.
func (c *ColumnBuffers) Fill(rows []docflow.Metric, clock func(time.Time) time.Time) []any {
	if c.cols == nil {
		c.cols = make([]any, len(columns))
	}
	for i, col := range columns {
		c.cols[i] = col.fill(c.cols[i], rows, clock)
	}
	return c.cols
}

// Reset drops the references the columns hold to the last batch's strings,
// so that they can be collected while c waits for its next batch.
func (c *ColumnBuffers) Reset() {
	for _, v := range c.cols {
		if s, ok := v.([]string); ok {
			clear(s)
		}
	}
}

// sized returns prev (when it is a []E) or a new slice, of length n.
func sized[E any](prev any, n int) []E {
	v, _ := prev.([]E)
	return slices.Grow(v[:0], n)[:n]
}

func (c column) fill(prev any, rows []docflow.Metric, clock func(time.Time) time.Time) any {
	switch {
	case c.s != nil:
		v := sized[string](prev, len(rows))
		// A column repeats a few values (kinds, step types, routes, the
		// same worker): a value equal to the previous row's is clean
		// already. The comparison of the same string is a pointer check.
		last, lastClean := "", ""
		for j := range rows {
			s := c.s(&rows[j])
			if j == 0 || s != last {
				last, lastClean = s, clean(s)
			}
			v[j] = lastClean
		}
		return v
	case c.i64 != nil:
		v := sized[int64](prev, len(rows))
		for j := range rows {
			v[j] = c.i64(&rows[j])
		}
		return v
	case c.i32 != nil:
		v := sized[int32](prev, len(rows))
		for j := range rows {
			v[j] = clamp32(c.i32(&rows[j]))
		}
		return v
	case c.f64 != nil:
		v := sized[float64](prev, len(rows))
		for j := range rows {
			v[j] = c.f64(&rows[j])
		}
		return v
	default:
		v := sized[time.Time](prev, len(rows))
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
