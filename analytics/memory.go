package analytics

import (
	"context"
	"sync"

	"docflow"
)

// Memory keeps every recorded metric in memory, in order. It is the
// recorder of tests that check which metrics a component emits; it never
// drops and never writes anywhere.
type Memory struct {
	mu      sync.Mutex
	metrics []docflow.Metric
}

var _ docflow.Recorder = (*Memory)(nil)

// Record keeps m.
func (r *Memory) Record(m docflow.Metric) {
	r.mu.Lock()
	r.metrics = append(r.metrics, m)
	r.mu.Unlock()
}

// Metrics returns a copy of the metrics recorded so far of the given kind
// ("" for all).
func (r *Memory) Metrics(kind string) []docflow.Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []docflow.Metric
	for _, m := range r.metrics {
		if kind == "" || m.Kind == kind {
			out = append(out, m)
		}
	}
	return out
}

// Flush does nothing: every metric is kept at once.
func (*Memory) Flush(context.Context) error { return nil }

// Ping always answers.
func (*Memory) Ping(context.Context) error { return nil }

// Close does nothing; the metrics stay readable.
func (*Memory) Close() error { return nil }
