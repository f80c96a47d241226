package analytics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"docflow"
)

// Store is what a metrics backend provides to Recorder.
type Store interface {
	// WriteMetrics writes all rows or none (one COPY, one INSERT block).
	WriteMetrics(ctx context.Context, rows []docflow.Metric) error
	// Ping checks that the backend answers.
	Ping(ctx context.Context) error
}

// Recorder is a docflow.Recorder that batches metrics into a Store. The
// backend packages embed it.
type Recorder struct {
	store Store
	b     *Batcher[docflow.Metric]
	now   func() time.Time
}

var _ docflow.Recorder = (*Recorder)(nil)

// NewRecorder starts a Recorder writing to store; Close stops it.
func NewRecorder(store Store, opts Options) (*Recorder, error) {
	if store == nil {
		return nil, errors.New("analytics: nil store")
	}
	opts = opts.withDefaults()
	return &Recorder{
		store: store,
		b:     NewBatcher(store.WriteMetrics, opts),
		now:   opts.Now,
	}, nil
}

// Record queues m without blocking; a zero Time is set to now. Under overload
// the metric is dropped and counted in Stats.
func (r *Recorder) Record(m docflow.Metric) {
	if m.Time.IsZero() {
		m.Time = r.now()
	}
	r.b.Add(m)
}

// Flush writes every metric recorded before the call.
func (r *Recorder) Flush(ctx context.Context) error {
	if err := r.b.Flush(ctx); err != nil {
		return fmt.Errorf("flush metrics: %w", err)
	}
	return nil
}

// Ping checks the backend.
func (r *Recorder) Ping(ctx context.Context) error {
	if err := r.store.Ping(ctx); err != nil {
		return fmt.Errorf("ping metrics store: %w", err)
	}
	return nil
}

// Close flushes what is buffered and stops the background writer. It does
// not close the store's connection, which its owner closes.
func (r *Recorder) Close() error {
	if err := r.b.Close(); err != nil {
		return fmt.Errorf("close metrics recorder: %w", err)
	}
	return nil
}

// Stats returns the recorder's counters for health and metrics endpoints.
func (r *Recorder) Stats() Stats { return r.b.Stats() }

// Bounded returns o set so that at most total metrics are held in memory
// (queue and write buffer together) while the store is unreachable: half
// the bound queues, half waits for the write, and a batch is at most the
// default size and never more than half the queue.
//
// NOTE: the writer loop keeps taking whole batches from the queue while a
// write is in flight, up to MaxBuffered (the batch being written and the
// next one), so the next write starts as soon as one ends; the queue, half
// the bound and at least two batches, absorbs a burst beyond that.
func (o Options) Bounded(total int) Options {
	if total < 2 {
		total = 2
	}
	o.QueueSize = total / 2
	o.MaxBuffered = total - o.QueueSize
	o.BatchSize = max(1, min(DefaultBatchSize, o.QueueSize/2))
	return o
}
