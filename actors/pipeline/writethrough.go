package pipeline

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"docflow/storage/postgres"
	"docflow/streams"
)

// writeThrough publishes the outbox rows of a committed step result at once
// instead of waiting for the relay, and marks them sent in batches. The
// rows were written quiet and held back for a grace period, so the relay
// publishes them only if this process could not (it died between the
// commit and the publish, or the broker refused): delivery stays
// at-least-once, and a document no longer waits for a relay round per
// step.
type writeThrough struct {
	pub   streams.Publisher
	store *postgres.RunStore
	log   zerolog.Logger

	mu      sync.Mutex
	pending []int64
	wake    chan struct{}
}

func newWriteThrough(pub streams.Publisher, store *postgres.RunStore, log zerolog.Logger) *writeThrough {
	return &writeThrough{pub: pub, store: store, log: log, wake: make(chan struct{}, 1)}
}

// send publishes msgs (the rows ids of one transaction, in order) and
// queues their ids to be marked sent. A failed publish is left to the relay.
func (w *writeThrough) send(ctx context.Context, msgs []streams.OutboxMessage, ids []int64) {
	if len(ids) == 0 || len(ids) != len(msgs) {
		return
	}
	out := make([]streams.Message, len(msgs))
	for i, m := range msgs {
		km := streams.Message{Topic: m.Topic, Value: m.Payload}
		if m.Key != "" {
			km.Key = []byte(m.Key)
		}
		names := make([]string, 0, len(m.Headers))
		for k := range m.Headers {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			km.Headers = append(km.Headers, streams.Header{Key: k, Value: []byte(m.Headers[k])})
		}
		out[i] = km
	}
	if err := w.pub.Publish(ctx, out...); err != nil {
		if ctx.Err() == nil {
			w.log.Warn().Err(err).Int("messages", len(out)).Msg("write-through publish failed; the outbox relay will publish")
		}
		return
	}
	w.mu.Lock()
	w.pending = append(w.pending, ids...)
	n := len(w.pending)
	w.mu.Unlock()
	if n >= 500 {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// run marks published rows sent every interval until ctx ends, then once
// more.
func (w *writeThrough) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			w.flush(fctx)
			cancel()
			return
		case <-t.C:
		case <-w.wake:
		}
		w.flush(ctx)
	}
}

func (w *writeThrough) flush(ctx context.Context) {
	w.mu.Lock()
	ids := w.pending
	w.pending = nil
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	if err := w.store.MarkSent(ctx, ids); err != nil {
		// The relay will publish them again after their grace:
		// duplicates that the steps' idempotency absorbs.
		w.log.Debug().Err(err).Int("rows", len(ids)).Msg("mark write-through rows sent")
	}
}
