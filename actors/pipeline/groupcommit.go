package pipeline

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"docflow"
)

// batcher groups the database writes of concurrent tasks into shared
// transactions: one round trip and one commit per batch instead of per
// task. It adds no waiting of its own: a request is written at once by an
// idle flusher; requests that arrive while every flusher is busy wait for
// the next free one and share its transaction. Under load, batches grow by
// themselves; on an idle system every request goes alone.
type batcher[T, R any] struct {
	max   int // requests per batch
	flush func(ctx context.Context, reqs []T) []answer[R]

	mu    sync.Mutex
	queue []*pending[T, R]
	wake  chan struct{}

	// batches and requests count what the flushers wrote, for GroupStats.
	batches, requests atomic.Int64
}

type pending[T, R any] struct {
	req  T
	done chan answer[R] // buffered: a flusher never waits for its caller
}

type answer[R any] struct {
	v   R
	err error
}

func newBatcher[T, R any](flushers, max int, flush func(ctx context.Context, reqs []T) []answer[R]) *batcher[T, R] {
	return &batcher[T, R]{max: max, flush: flush, wake: make(chan struct{}, flushers)}
}

// do queues req and waits for its answer. A cancelled ctx returns at once;
// the request may still be written (the callers' writes are idempotent).
func (b *batcher[T, R]) do(ctx context.Context, req T) (R, error) {
	p := &pending[T, R]{req: req, done: make(chan answer[R], 1)}
	b.mu.Lock()
	b.queue = append(b.queue, p)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default: // every flusher is awake already and will see the queue
	}
	select {
	case a := <-p.done:
		return a.v, a.err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// run is one flusher; cap(b.wake) of them run until ctx ends.
func (b *batcher[T, R]) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			b.failQueued(ctx.Err())
			return
		case <-b.wake:
		}
		for {
			batch := b.take()
			if len(batch) == 0 {
				break
			}
			b.batches.Add(1)
			b.requests.Add(int64(len(batch)))
			reqs := make([]T, len(batch))
			for i, p := range batch {
				reqs[i] = p.req
			}
			answers := b.flush(ctx, reqs)
			for i, p := range batch {
				p.done <- answers[i]
			}
		}
	}
}

func (b *batcher[T, R]) take() []*pending[T, R] {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(b.queue), b.max)
	if n == 0 {
		return nil
	}
	batch := make([]*pending[T, R], n)
	copy(batch, b.queue)
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	return batch
}

func (b *batcher[T, R]) failQueued(err error) {
	b.mu.Lock()
	q := b.queue
	b.queue = nil
	b.mu.Unlock()
	for _, p := range q {
		p.done <- answer[R]{err: err}
	}
}

// resultBatcher records successful step results in shared transactions: a
// synchronous commit (a WAL flush) per batch instead of per result. The
// acknowledgement contract is unchanged: a caller gets its answer only
// after the transaction holding its result committed, and acknowledges
// the delivery after that.
func resultBatcher(store Results, log zerolog.Logger, flushers, max int) *batcher[docflow.StepCompletion, *docflow.RunWrite] {
	return newBatcher(flushers, max, func(ctx context.Context, items []docflow.StepCompletion) []answer[*docflow.RunWrite] {
		out := make([]answer[*docflow.RunWrite], len(items))
		one := func(i int) {
			out[i].v, out[i].err = store.CompleteStep(ctx, items[i].Record, items[i].Msgs...)
		}
		if len(items) == 1 {
			one(0)
			return out
		}
		ws, err := store.CompleteSteps(ctx, items)
		switch {
		case err == nil:
			for i := range out {
				out[i].v = ws[i]
			}
		case transientDB(err) || ctx.Err() != nil:
			// Each caller retries (withDB) and lands in a later batch.
			for i := range out {
				out[i].err = err
			}
		default:
			// A result the database refuses must not fail the others:
			// record them one by one, so the error reaches only its own
			// task.
			log.Debug().Err(err).Int("results", len(items)).Msg("group commit refused; recording one by one")
			for i := range items {
				one(i)
			}
		}
		return out
	})
}

// claimBatcher leases steps for many tasks in one round trip. Claims may
// commit asynchronously (see Claims), so what a batch saves is round trips
// and transactions.
func claimBatcher(store Claims, flushers, max int) *batcher[docflow.StepClaimRequest, *docflow.StepClaim] {
	return newBatcher(flushers, max, func(ctx context.Context, reqs []docflow.StepClaimRequest) []answer[*docflow.StepClaim] {
		out := make([]answer[*docflow.StepClaim], len(reqs))
		for i, r := range store.ClaimSteps(ctx, reqs) {
			out[i] = answer[*docflow.StepClaim]{v: r.Claim, err: r.Err}
		}
		return out
	})
}

// completion pairs a result with its outbox messages for resultBatcher.
func completion(rec docflow.StepRecord, msgs []docflow.OutboxMessage) docflow.StepCompletion {
	return docflow.StepCompletion{Record: rec, Msgs: msgs}
}
