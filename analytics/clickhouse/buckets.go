package clickhouse

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Counting queries grouped by bucket (eachSeries) keep their rows the way
// percentiles keep their histograms (hist.go): a bucket wholly inside the
// window and closed (see settleSeconds) answers the same at every read, so
// its rows are kept in the API process, and a dashboard's moving window
// asks the server only for its edges and the buckets it has not seen.
// Totals that a report adds up from its series' rows come out the same.

// edgeMinutes is the longest read (in seconds, the buckets not kept
// together) taken from the per-minute rollups alone (span.minutes): 720
// rows per key, where the tiers would read a few hours and a few minutes
// through a UNION ALL.
const edgeMinutes = 12 * hour

// maxParts bounds the ranges one read names.
const maxParts = 32

// rowScanner is what a report's scan function reads a row through: a
// server's rows or kept ones.
type rowScanner interface {
	Scan(dest ...any) error
}

// eachSeries runs the query that build makes for a span and calls scan for
// every row, as each, for a query whose first column is the bucket start
// (span.t) and whose rows are ordered by it first. Rows of kept buckets are
// replayed in their place; build is given a span whose parts are the other
// buckets' ranges (the window's edges, the buckets not kept), and is not
// run when there are none. what names the query and, with args and the
// buckets' width, keys the rows kept: build must make the same query for
// the same what and args.
func (q Queries) eachSeries(ctx context.Context, what string, s span, args []any, build func(s span) string, scan func(r rowScanner) error) error {
	if q.hists == nil || s.interval <= 0 {
		return q.each(ctx, what, build(s), args, func(r driver.Rows) error { return scan(r) })
	}
	name := "rows " + what + "|" + fmt.Sprint(args...)
	now := time.Now().Unix()
	first := s.lo - s.lo%s.interval
	// Only buckets wholly inside the window may be kept ones: an edge's
	// rows are of its part inside.
	var keys, inside, edges []unitKey
	for t := first; t < s.hi; t += s.interval {
		k := unitKey{name, s.interval, t}
		keys = append(keys, k)
		if t >= s.lo && t+s.interval <= s.hi {
			inside = append(inside, k)
		} else {
			edges = append(edges, k)
		}
	}
	kept, missing := q.hists.getRows(inside, now)
	missing = append(missing, edges...)
	sort.Slice(missing, func(i, j int) bool { return missing[i].start < missing[j].start })
	// The ranges to read: the buckets not kept, clipped to the window,
	// neighbours joined.
	var parts [][2]int64
	for _, k := range missing {
		lo, hi := max(k.start, s.lo), min(k.start+s.interval, s.hi)
		if n := len(parts); n > 0 && parts[n-1][1] == lo {
			parts[n-1][1] = hi
			continue
		}
		parts = append(parts, [2]int64{lo, hi})
	}
	if len(parts) > maxParts {
		// Kept buckets scattered through the window: read it whole
		// rather than build a condition of thousands of ranges (the
		// rows read of kept buckets are not used).
		parts = [][2]int64{{parts[0][0], parts[len(parts)-1][1]}}
	}
	read := map[int64][][]any{}
	if len(parts) > 0 {
		sub := s
		sub.parts = parts
		var length int64
		for _, p := range parts {
			length += p[1] - p[0]
		}
		sub.minutes = length <= edgeMinutes
		err := q.eachRaw(ctx, what, build(sub), args, func(row []any) error {
			t, ok := row[0].(time.Time)
			if !ok {
				return fmt.Errorf("first column is %T, not the bucket start", row[0])
			}
			read[t.Unix()] = append(read[t.Unix()], row)
			return nil
		})
		if err != nil {
			return err
		}
		// Buckets wholly inside the window are kept, rows or none.
		put := map[unitKey][][]any{}
		for _, k := range missing {
			if k.start >= s.lo && k.start+s.interval <= s.hi {
				put[k] = read[k.start]
			}
		}
		q.hists.putRows(put, now)
	}
	var rep replay
	for _, k := range keys {
		rows, ok := kept[k]
		if !ok {
			rows = read[k.start]
		}
		for _, row := range rows {
			rep.row = row
			if err := scan(&rep); err != nil {
				return fmt.Errorf("read %s: %w", what, err)
			}
		}
	}
	return nil
}

// eachRaw runs query and calls f with each row's values, of the types the
// driver scans its columns into.
func (q Queries) eachRaw(ctx context.Context, what, query string, args []any, f func(row []any) error) error {
	var types []reflect.Type
	return q.each(ctx, what, query, args, func(r driver.Rows) error {
		if types == nil {
			for _, c := range r.ColumnTypes() {
				types = append(types, c.ScanType())
			}
		}
		ptrs := make([]any, len(types))
		for i, t := range types {
			ptrs[i] = reflect.New(t).Interface()
		}
		if err := r.Scan(ptrs...); err != nil {
			return err
		}
		row := make([]any, len(ptrs))
		for i, p := range ptrs {
			row[i] = reflect.ValueOf(p).Elem().Interface()
		}
		return f(row)
	})
}

// replay scans a kept row.
type replay struct{ row []any }

func (r *replay) Scan(dest ...any) error {
	if len(dest) != len(r.row) {
		return fmt.Errorf("scan %d values of a row of %d", len(dest), len(r.row))
	}
	for i, d := range dest {
		dv := reflect.ValueOf(d)
		if dv.Kind() != reflect.Pointer || dv.IsNil() {
			return fmt.Errorf("scan into %T", d)
		}
		v := reflect.ValueOf(r.row[i])
		switch e := dv.Elem(); {
		case v.Type().AssignableTo(e.Type()):
			e.Set(v)
		case v.Type().ConvertibleTo(e.Type()) && v.Kind() != reflect.String && e.Kind() != reflect.String:
			e.Set(v.Convert(e.Type()))
		default:
			return fmt.Errorf("scan %s into %s", v.Type(), e.Type())
		}
	}
	return nil
}

// rowsWeight is what a bucket's rows count for against maxPairs: three
// per value (a boxed value is some 30 bytes, a bucket's count 9).
func rowsWeight(rows [][]any) int {
	n := 0
	for _, r := range rows {
		n += 3 * len(r)
	}
	return n
}
