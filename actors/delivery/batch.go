package delivery

import (
	"context"
	"time"

	"docflow"
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

// recordReq is one attempt waiting for its batch; ok answers whether it
// was written (false: the service stopped first).
type recordReq struct {
	rec docflow.RecordedAttempt
	ok  chan bool
	// postpone: not an attempt but rec.Attempt.DeliveryID postponed to
	// due with msg.
	postpone bool
	due      time.Time
	msg      docflow.OutboxMessage
}

// batcher collects the attempts' results and writes them a batch at a
// time, on one goroutine: while a batch is written the next one gathers,
// so batches grow with the load and an idle service writes each attempt
// at once (no lingering).
type batcher struct {
	s     *Service
	store BatchStore
	in    chan recordReq
}

func newBatcher(s *Service, store BatchStore) *batcher {
	return &batcher{s: s, store: store, in: make(chan recordReq, 4*maxBatch)}
}

// record writes rec with the next batch and waits for it: false when the
// service stopped before (the attempt is then made again by the next
// owner).
func (b *batcher) record(rec docflow.RecordedAttempt) bool {
	return b.send(recordReq{rec: rec, ok: make(chan bool, 1)})
}

// postpone postpones delivery id to due with m, with the next batch, and
// waits for it; false when the service stopped first.
func (b *batcher) postpone(id int64, due time.Time, m docflow.OutboxMessage) bool {
	r := recordReq{rec: docflow.RecordedAttempt{Attempt: docflow.DeliveryAttempt{DeliveryID: id}},
		ok: make(chan bool, 1), postpone: true, due: due, msg: m}
	return b.send(r)
}

func (b *batcher) send(r recordReq) bool {
	select {
	case b.in <- r:
	case <-b.s.ctx.Done():
		return false
	}
	select {
	case ok := <-r.ok:
		return ok
	case <-b.s.ctx.Done():
		return false
	}
}

// run writes batches until the service stops.
func (b *batcher) run() {
	var held []recordReq // a second attempt of a delivery already in the batch
	for {
		var batch []recordReq
		seen := map[int64]bool{}
		add := func(r recordReq, next *[]recordReq) {
			if id := r.rec.Attempt.DeliveryID; seen[id] {
				*next = append(*next, r)
			} else {
				seen[id] = true
				batch = append(batch, r)
			}
		}
		prev := held
		held = nil
		for _, r := range prev {
			add(r, &held)
		}
		if len(batch) == 0 {
			select {
			case r := <-b.in:
				add(r, &held)
			case <-b.s.ctx.Done():
				return
			}
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case r := <-b.in:
				add(r, &held)
			default:
				break gather
			}
		}
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
		ok := b.s.retry("record delivery attempts", func(ctx context.Context) error {
			if err := b.store.PostponeAll(ctx, ids, dues, msgs); err != nil {
				return err
			}
			return b.store.RecordAttempts(ctx, recs)
		})
		for _, r := range batch {
			r.ok <- ok
		}
		if !ok {
			return
		}
	}
}
