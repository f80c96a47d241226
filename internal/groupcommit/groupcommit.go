// Package groupcommit groups the writes of concurrent callers into shared
// transactions: one round trip and one commit per batch instead of one
// per caller.
//
// It adds no waiting of its own. A request is written at once by an idle
// flusher; requests that arrive while every flusher is busy wait for the
// next free one and share its batch. Under load batches grow by
// themselves; on an idle system every request goes alone.
package groupcommit

import (
	"context"
	"sync"
	"sync/atomic"
)

// Answer is what a batch's flush gives one request.
type Answer[R any] struct {
	V   R
	Err error
}

// Config shapes a Committer.
type Config[T, R any] struct {
	// Flushers is how many batches may be written at once (at least 1):
	// start as many Run goroutines.
	Flushers int
	// Max bounds the requests of one batch (at least 1).
	Max int
	// Flush writes a batch and answers each request, in order: it returns
	// exactly len(reqs) answers.
	Flush func(ctx context.Context, reqs []T) []Answer[R]
	// Key, when set, keeps two requests with the same key out of one
	// batch: the later one waits, in order, for a following batch (for
	// writes that must not meet in one statement, such as two attempts of
	// one delivery). ok false: the request has no key.
	Key func(req T) (key any, ok bool)
}

// Committer is a group commit of requests T answered with R. The zero
// value is not usable: build one with New.
type Committer[T, R any] struct {
	cfg Config[T, R]

	mu    sync.Mutex
	queue []*pending[T, R]
	wake  chan struct{}

	batches, requests atomic.Int64
}

type pending[T, R any] struct {
	req  T
	done chan Answer[R] // buffered: a flusher never waits for its caller
}

// New builds a Committer; start cfg.Flushers goroutines of Run.
func New[T, R any](cfg Config[T, R]) *Committer[T, R] {
	cfg.Flushers, cfg.Max = max(cfg.Flushers, 1), max(cfg.Max, 1)
	if cfg.Flush == nil {
		panic("groupcommit: New needs Flush")
	}
	return &Committer[T, R]{cfg: cfg, wake: make(chan struct{}, cfg.Flushers)}
}

// Do queues req and waits for its answer. A cancelled ctx returns at once
// with ctx's error; the request may still be written, so callers' writes
// must be idempotent. Requests still queued when every Run has returned
// get the error of Run's context.
func (c *Committer[T, R]) Do(ctx context.Context, req T) (R, error) {
	p := &pending[T, R]{req: req, done: make(chan Answer[R], 1)}
	c.mu.Lock()
	c.queue = append(c.queue, p)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // every flusher is awake already and will see the queue
	}
	select {
	case a := <-p.done:
		return a.V, a.Err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// Run is one flusher: it writes batches until ctx ends, then fails what
// is still queued with ctx's error.
func (c *Committer[T, R]) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			c.failQueued(ctx.Err())
			return
		case <-c.wake:
		}
		for {
			batch := c.take()
			if len(batch) == 0 {
				break
			}
			c.batches.Add(1)
			c.requests.Add(int64(len(batch)))
			reqs := make([]T, len(batch))
			for i, p := range batch {
				reqs[i] = p.req
			}
			answers := c.cfg.Flush(ctx, reqs)
			for i, p := range batch {
				p.done <- answers[i]
			}
		}
	}
}

// Stats counts the batches written and the requests they held.
func (c *Committer[T, R]) Stats() (batches, requests int64) {
	return c.batches.Load(), c.requests.Load()
}

// Queued is how many requests wait for a batch.
func (c *Committer[T, R]) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// take removes the next batch from the queue: up to Max requests in
// order, skipping (and keeping queued, in order) any whose key is already
// in the batch.
func (c *Committer[T, R]) take() []*pending[T, R] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.Key == nil {
		n := min(len(c.queue), c.cfg.Max)
		if n == 0 {
			return nil
		}
		batch := make([]*pending[T, R], n)
		copy(batch, c.queue)
		rest := copy(c.queue, c.queue[n:])
		clear(c.queue[rest:])
		c.queue = c.queue[:rest]
		return batch
	}
	var batch []*pending[T, R]
	seen := map[any]bool{}
	kept := c.queue[:0]
	for i, p := range c.queue {
		if len(batch) == c.cfg.Max {
			kept = append(kept, c.queue[i:]...)
			break
		}
		if k, ok := c.cfg.Key(p.req); ok {
			if seen[k] {
				kept = append(kept, p)
				continue
			}
			seen[k] = true
		}
		batch = append(batch, p)
	}
	clear(c.queue[len(kept):])
	c.queue = kept
	return batch
}

func (c *Committer[T, R]) failQueued(err error) {
	c.mu.Lock()
	q := c.queue
	c.queue = nil
	c.mu.Unlock()
	for _, p := range q {
		p.done <- Answer[R]{Err: err}
	}
}
