package analytics

import (
	"slices"
	"strings"
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
type ColumnBuffers struct {
	cols []any
	used ColumnSet
}

// ColumnSet is a set of columns, bit i standing for the i-th of Columns.
type ColumnSet uint64

// AllColumns holds every column.
var AllColumns = ColumnSet(1)<<len(columns) - 1

// Has reports whether the i-th column is in s.
func (s ColumnSet) Has(i int) bool { return s&(1<<i) != 0 }

// List names s's columns, comma-separated, in Columns order.
func (s ColumnSet) List() string {
	var b strings.Builder
	for i, c := range columns {
		if s.Has(i) {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.name)
		}
	}
	return b.String()
}

// Fill is Columnar into c's slices, reusing their memory. The result is
// valid until the next Fill or Reset.
func (c *ColumnBuffers) Fill(rows []docflow.Metric, clock func(time.Time) time.Time) []any {
	if c.cols == nil {
		c.cols = make([]any, len(columns))
	}
	c.used = 0
	for i, col := range columns {
		var used bool
		c.cols[i], used = col.fill(c.cols[i], rows, clock)
		if used {
			c.used |= 1 << i
		}
	}
	return c.cols
}

// Used is the set of the columns that the last Fill gave a value other
// than their type's zero in some row; the time column is always in it.
// Each kind of metric sets about a third of the columns, so a batch of one
// or two kinds can be inserted naming only these: the store gives the rest
// their zero, which is the same row (no column has another default).
func (c *ColumnBuffers) Used() ColumnSet { return c.used }

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

func (c column) fill(prev any, rows []docflow.Metric, clock func(time.Time) time.Time) (_ any, used bool) {
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
				used = used || lastClean != ""
			}
			v[j] = lastClean
		}
		return v, used
	case c.i64 != nil:
		v := sized[int64](prev, len(rows))
		var or int64
		for j := range rows {
			v[j] = c.i64(&rows[j])
			or |= v[j]
		}
		return v, or != 0
	case c.i32 != nil:
		v := sized[int32](prev, len(rows))
		var or int32
		for j := range rows {
			v[j] = clamp32(c.i32(&rows[j]))
			or |= v[j]
		}
		return v, or != 0
	case c.f64 != nil:
		v := sized[float64](prev, len(rows))
		for j := range rows {
			v[j] = c.f64(&rows[j])
			used = used || v[j] != 0
		}
		return v, used
	default:
		v := sized[time.Time](prev, len(rows))
		for j := range rows {
			t := rows[j].Time.UTC()
			if clock != nil {
				t = clock(t)
			}
			v[j] = t
		}
		return v, true
	}
}
