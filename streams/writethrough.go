package streams

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"docflow"
)

// SentMarker marks outbox rows published outside the relay
// (storage/postgres.Outbox.MarkSent).
type SentMarker interface {
	MarkSent(ctx context.Context, ids []int64) error
}

// WriteThrough publishes the outbox rows of a committed transaction at once
// instead of waiting for the relay, the way the relay publishes
// (publishRows), and marks them sent in batches. The rows were written
// quiet (they wake no relay) and held back for a grace period, so the relay
// publishes them only if this process could not (it died between the commit
// and the publish, or the broker refused): delivery stays at-least-once,
// and a document no longer waits for a relay round per step.
type WriteThrough struct {
	pub   Publisher
	store SentMarker
	log   zerolog.Logger

	mu      sync.Mutex
	pending []int64
	wake    chan struct{}
}

// NewWriteThrough returns a write-through over pub and store; Run marks
// what it published.
func NewWriteThrough(pub Publisher, store SentMarker, log zerolog.Logger) *WriteThrough {
	return &WriteThrough{pub: pub, store: store, log: log, wake: make(chan struct{}, 1)}
}

// Send publishes msgs, the rows ids of one committed transaction in order,
// and queues the ids the broker acknowledged to be marked sent. What fails
// is left to the relay.
func (w *WriteThrough) Send(ctx context.Context, msgs []docflow.OutboxMessage, ids []int64) {
	if len(ids) == 0 || len(ids) != len(msgs) {
		return
	}
	rows := make([]docflow.OutboxRow, len(msgs))
	for i, m := range msgs {
		rows[i] = docflow.OutboxRow{ID: ids[i], OutboxMessage: m}
	}
	ok, failures := publishRows(ctx, w.pub, rows)
	if len(failures) > 0 && ctx.Err() == nil {
		w.log.Warn().Err(failures[0].err).Int("messages", len(msgs)).Msg("write-through publish failed; the outbox relay will publish")
	}
	sent := make([]int64, 0, len(ids))
	for i, id := range ids {
		if ok[i] {
			sent = append(sent, id)
		}
	}
	if len(sent) == 0 {
		return
	}
	w.mu.Lock()
	w.pending = append(w.pending, sent...)
	n := len(w.pending)
	w.mu.Unlock()
	if n >= 500 {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// Run marks published rows sent every interval until ctx ends, then once
// more.
func (w *WriteThrough) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			w.Flush(fctx)
			cancel()
			return
		case <-t.C:
		case <-w.wake:
		}
		w.Flush(ctx)
	}
}

// Flush marks the rows published so far sent.
func (w *WriteThrough) Flush(ctx context.Context) {
	w.mu.Lock()
	ids := w.pending
	w.pending = nil
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	if err := w.store.MarkSent(ctx, ids); err != nil {
		// The relay will publish them again after their grace:
		// duplicates that the receivers' idempotency absorbs.
		w.log.Debug().Err(err).Int("rows", len(ids)).Msg("mark write-through rows sent")
	}
}
