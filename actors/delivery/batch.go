package delivery

import (
	"context"
	"errors"
	"time"

	"docflow"
	"docflow/internal/groupcommit"
)

// BatchStore is a Store that also records attempts in batches
// (postgres.WebhookStore): the service then writes the attempts of a
// burst a batch per round trip instead of a transaction each.
type BatchStore interface {
	RecordAttempts(ctx context.Context, batch []docflow.RecordedAttempt) error
	// PostponeAll postpones deliveries ids[i] to dues[i], writing msgs[i]
	// with each, in one transaction.
	PostponeAll(ctx context.Context, ids []int64, dues []time.Time, msgs []docflow.OutboxMessage) error
}

// maxBatch bounds the attempts written together.
const maxBatch = 256

// recordReq is one attempt waiting for its batch, or (postpone) delivery
// rec.Attempt.DeliveryID postponed to due with msg.
type recordReq struct {
	rec      docflow.RecordedAttempt
	postpone bool
	due      time.Time
	msg      docflow.OutboxMessage
}

// errStopped answers the requests of a batch the service stopped before
// writing.
var errStopped = errors.New("delivery stopped")

// attemptWriter writes the attempts' results a batch at a time, on one
// flusher: while a batch is written the next one gathers, so batches
// grow with the load and an idle service writes each attempt at once (no
// lingering). Two requests of one delivery never share a batch.
type attemptWriter struct {
	s      *Service
	commit *groupcommit.Committer[recordReq, struct{}]
}

func newAttemptWriter(s *Service, store BatchStore) *attemptWriter {
	w := &attemptWriter{s: s}
	w.commit = groupcommit.New(groupcommit.Config[recordReq, struct{}]{Flushers: 1, Max: maxBatch,
		Key: func(r recordReq) (any, bool) { return r.rec.Attempt.DeliveryID, true },
		Flush: func(_ context.Context, batch []recordReq) []groupcommit.Answer[struct{}] {
			return w.flush(store, batch)
		}})
	return w
}

// record writes rec with the next batch and waits for it: false when the
// service stopped before (the attempt is then made again by the next
// owner).
func (w *attemptWriter) record(rec docflow.RecordedAttempt) bool {
	_, err := w.commit.Do(w.s.ctx, recordReq{rec: rec})
	return err == nil
}

// postpone postpones delivery id to due with m, with the next batch, and
// waits for it; false when the service stopped first.
func (w *attemptWriter) postpone(id int64, due time.Time, m docflow.OutboxMessage) bool {
	r := recordReq{rec: docflow.RecordedAttempt{Attempt: docflow.DeliveryAttempt{DeliveryID: id}}, postpone: true, due: due, msg: m}
	_, err := w.commit.Do(w.s.ctx, r)
	return err == nil
}

// run writes batches until the service stops.
func (w *attemptWriter) run() { w.commit.Run(w.s.ctx) }

// flush writes one batch, retrying while the store is away; every request
// of the batch gets the same answer.
func (w *attemptWriter) flush(store BatchStore, batch []recordReq) []groupcommit.Answer[struct{}] {
	var recs []docflow.RecordedAttempt
	var ids []int64
	var dues []time.Time
	var msgs []docflow.OutboxMessage
	for _, r := range batch {
		if r.postpone {
			ids, dues, msgs = append(ids, r.rec.Attempt.DeliveryID), append(dues, r.due), append(msgs, r.msg)
		} else {
			recs = append(recs, r.rec)
		}
	}
	ok := w.s.retry("record delivery attempts", func(ctx context.Context) error {
		if err := store.PostponeAll(ctx, ids, dues, msgs); err != nil {
			return err
		}
		return store.RecordAttempts(ctx, recs)
	})
	out := make([]groupcommit.Answer[struct{}], len(batch))
	if !ok {
		for i := range out {
			out[i].Err = errStopped
		}
	}
	return out
}
