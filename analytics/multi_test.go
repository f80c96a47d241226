package analytics

import (
	"context"
	"errors"
	"testing"
	"time"

	"docflow"
)

type countingRecorder struct {
	Nop
	n   int
	err error
}

func (c *countingRecorder) Record(docflow.Metric)       { c.n++ }
func (c *countingRecorder) Flush(context.Context) error { return c.err }
func (c *countingRecorder) Close() error                { return c.err }

func TestMulti(t *testing.T) {
	boom := errors.New("boom")
	a, b := &countingRecorder{}, &countingRecorder{err: boom}
	m := Multi{a, b, Nop{}}
	m.Record(docflow.Metric{Kind: docflow.MetricStep})
	m.Record(docflow.Metric{Kind: docflow.MetricStep})
	if a.n != 2 || b.n != 2 {
		t.Fatalf("recorded %d and %d, want 2 each", a.n, b.n)
	}
	if err := m.Flush(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Flush = %v, want the failing recorder's error", err)
	}
	if err := m.Ping(context.Background()); err != nil {
		t.Fatalf("Ping = %v", err)
	}
	if err := m.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close = %v, want the failing recorder's error", err)
	}
}

type fakeMetricStore struct {
	rows []docflow.Metric
}

func (f *fakeMetricStore) WriteMetrics(_ context.Context, rows []docflow.Metric) error {
	f.rows = append(f.rows, rows...)
	return nil
}
func (f *fakeMetricStore) Ping(context.Context) error { return nil }

func TestRecorderStampsTime(t *testing.T) {
	if _, err := NewRecorder(nil, Options{}); err == nil {
		t.Fatal("NewRecorder(nil) succeeded")
	}
	now := docflow.Metric{}.Time.AddDate(2026, 0, 0)
	s := &fakeMetricStore{}
	r, err := NewRecorder(s, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r.Record(docflow.Metric{Kind: docflow.MetricIntake})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if len(s.rows) != 1 || !s.rows[0].Time.Equal(now) {
		t.Fatalf("stored %+v, want one row stamped %v", s.rows, now)
	}
}
