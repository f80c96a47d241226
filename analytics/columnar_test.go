package analytics

import (
	"context"
	"reflect"
	"testing"
	"time"

	"docflow"
)

// Columnar gives, column by column, exactly what Values gives row by row.
func TestColumnarMatchesValues(t *testing.T) {
	rows := []docflow.Metric{
		{Kind: docflow.MetricStep, Time: time.Unix(1_700_000_000, 0), FileID: 7, StepType: "ocr", Attempt: 1 << 40, Duration: 1500 * time.Microsecond},
		{Kind: docflow.MetricIntegration, Time: time.Unix(1_700_000_001, 0), Type: "smtp", Direction: docflow.DirectionOut, Target: "a\x00b", Bytes: 12},
	}
	cols := Columnar(rows, nil)
	for j, m := range rows {
		want := Values(m)
		for i := range columns {
			got := reflect.ValueOf(cols[i]).Index(j).Interface()
			if !reflect.DeepEqual(got, want[i]) {
				t.Errorf("row %d column %s: %#v, want %#v", j, columns[i].name, got, want[i])
			}
		}
	}
}

// ColumnBuffers reused for a smaller batch gives what Columnar gives.
func TestColumnBuffersReuse(t *testing.T) {
	a := []docflow.Metric{{Kind: "a", Time: time.Unix(1, 0), FileID: 1}, {Kind: "b", Time: time.Unix(2, 0), FileID: 2}}
	b := []docflow.Metric{{Kind: "c", Time: time.Unix(3, 0), RunID: "r", Attempt: 3}}
	var c ColumnBuffers
	c.Fill(a, nil)
	c.Reset()
	if got, want := c.Fill(b, nil), Columnar(b, nil); !reflect.DeepEqual(got, want) {
		t.Fatalf("reused columns %v, want %v", got, want)
	}
}

// Used holds the columns some row sets, and the time column; List names
// them in order.
func TestColumnBuffersUsed(t *testing.T) {
	var c ColumnBuffers
	c.Fill([]docflow.Metric{
		{Kind: docflow.MetricStep, StepType: "ocr"},
		{Kind: docflow.MetricStep, Attempt: 2, ErrorClass: "\x00"}, // cleaned to "": not set
	}, nil)
	if got, want := c.Used().List(), "kind, ts, step_type, attempt"; got != want {
		t.Fatalf("used columns %q, want %q", got, want)
	}
	c.Fill([]docflow.Metric{{Kind: docflow.MetricLag, Lag: -1, CPU: 0.5}}, nil)
	if got, want := c.Used().List(), "kind, ts, lag, cpu"; got != want {
		t.Fatalf("used columns after a second fill %q, want %q", got, want)
	}
	if AllColumns.List() != ColumnList {
		t.Fatalf("AllColumns lists %q, want %q", AllColumns.List(), ColumnList)
	}
}

// BenchmarkRecord is the cost of one Record on the hot path (allocs/op
// should be 0: the metric is copied into the queue).
func BenchmarkRecord(b *testing.B) {
	r, err := NewRecorder(discard{}, Options{FlushInterval: 10 * time.Millisecond}.Bounded(200_000))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	m := docflow.Metric{Kind: docflow.MetricStep, Time: time.Now(), StepType: "ocr", Status: "completed", Duration: time.Millisecond}
	b.ReportAllocs()
	for b.Loop() {
		r.Record(m)
	}
}

// BenchmarkColumnar is the cost of turning a 50,000-row batch into columns.
func BenchmarkColumnar(b *testing.B) {
	rows := make([]docflow.Metric, 50_000)
	for i := range rows {
		rows[i] = docflow.Metric{Kind: docflow.MetricStep, Time: time.Now(), StepType: "ocr", Status: "completed", Duration: time.Millisecond}
	}
	b.ReportAllocs()
	for b.Loop() {
		Columnar(rows, nil)
	}
}

type discard struct{}

func (discard) WriteMetrics(context.Context, []docflow.Metric) error { return nil }
func (discard) Ping(context.Context) error                           { return nil }

// BenchmarkValues is the row-by-row encoding Columnar replaces, for
// comparison (same 50,000 rows).
func BenchmarkValues(b *testing.B) {
	rows := make([]docflow.Metric, 50_000)
	for i := range rows {
		rows[i] = docflow.Metric{Kind: docflow.MetricStep, Time: time.Now(), StepType: "ocr", Status: "completed", Duration: time.Millisecond}
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range rows {
			Values(rows[i])
		}
	}
}

// BenchmarkColumnBuffers is Columnar reusing its columns from batch to batch.
func BenchmarkColumnBuffers(b *testing.B) {
	rows := make([]docflow.Metric, 50_000)
	for i := range rows {
		rows[i] = docflow.Metric{Kind: docflow.MetricStep, Time: time.Now(), StepType: "ocr", Status: "completed", Duration: time.Millisecond}
	}
	var c ColumnBuffers
	b.ReportAllocs()
	for b.Loop() {
		c.Fill(rows, nil)
		c.Reset()
	}
}
