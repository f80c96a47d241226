package analytics

import (
	"context"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// loopState is what the Batcher's loop owns: the batches taken from the
// queue and not yet written (held, oldest first, a failed one first), the
// writes in flight, and the backoff after a failure. Only the loop's
// goroutine touches it.
type loopState[T any] struct {
	b *Batcher[T]

	held     []*batch[T] // waiting to be written, oldest first
	heldRows int         // rows in held and in flight
	inflight int

	retry    *time.Timer // non-nil once a failure has backed off
	retryC   <-chan time.Time
	failures int // failed writes since the last that succeeded
	backoff  *backoff.ExponentialBackOff

	// cutDue: FlushInterval has passed since the batch being filled was
	// last cut (takeMore).
	cutDue bool
}

// settle books a write's outcome: a written batch leaves held (its buffer
// is reused); the unsettled rest of a failed one goes back to the front,
// as the same batch when none of it was written, and the backoff starts.
func (l *loopState[T]) settle(r writeResult[T]) {
	b := l.b
	l.heldRows -= r.done
	if r.err == nil {
		b.recycle(r.b.rows)
		if l.failures > 0 {
			// The store answers again: whatever waits is written now
			// rather than after the backoff.
			b.opts.Logger.Info().Int("failed_attempts", l.failures).Msg("analytics writes recovered")
			l.failures, l.retryC = 0, nil
			l.backoff.Reset()
		}
		return
	}
	again := r.b
	if r.done > 0 {
		// A new batch: a retry of the whole must not take the part that
		// landed for all of it.
		again = &batch[T]{rows: r.b.rows[r.done:]}
	}
	l.held = append([]*batch[T]{again}, l.held...)
	if l.failures == 0 {
		l.backoff.Reset()
	}
	l.failures++
	d := l.backoff.NextBackOff()
	b.opts.Logger.Warn().Err(r.err).Int("rows", l.heldRows).
		Int("attempt", l.failures).Dur("retry_in", d).Msg("analytics write failed")
	if l.retry == nil {
		l.retry = time.NewTimer(d)
	} else {
		l.retry.Reset(d)
	}
	l.retryC = l.retry.C
}

// start begins background writes of held batches, up to Writers at once,
// unless backing off.
func (l *loopState[T]) start() {
	b := l.b
	for l.retryC == nil && l.inflight < b.opts.Writers && len(l.held) > 0 {
		bt := l.held[0]
		l.held[0] = nil
		l.held = l.held[1:]
		l.inflight++
		go func() {
			ctx, cancel := context.WithTimeout(b.stopCtx, b.opts.WriteTimeout)
			defer cancel()
			done, written, err := b.writeBatch(ctx, bt)
			b.results <- writeResult[T]{bt, done, written, err}
		}()
	}
}

// await books the outcome of every write in flight.
func (l *loopState[T]) await() {
	for ; l.inflight > 0; l.inflight-- {
		r := <-l.b.results
		l.settle(r)
		l.b.written.Add(int64(r.written))
	}
}

// writeHeld writes the held batches one at a time, in order, stopping at
// the first failure.
func (l *loopState[T]) writeHeld(ctx context.Context) error {
	b := l.b
	for len(l.held) > 0 {
		bt := l.held[0]
		l.held[0] = nil
		l.held = l.held[1:]
		wctx, cancel := context.WithTimeout(ctx, b.opts.WriteTimeout)
		done, written, err := b.writeBatch(wctx, bt)
		cancel()
		l.settle(writeResult[T]{bt, done, written, err})
		b.written.Add(int64(written))
		if err != nil {
			return err
		}
	}
	return nil
}

// take moves queued batches to held (Batcher.take); with cut it also
// takes the batch being filled.
func (l *loopState[T]) take(cut bool) int { return l.b.take(&l.held, &l.heldRows, cut) }

// takeMore takes the full batches queued and starts writes. The batch
// being filled is cut only once FlushInterval has passed and a writer
// would otherwise be idle: while writes keep the writers busy it grows
// into a full batch instead of becoming a small insert of its own (each
// insert is a part to merge), and after a failure only whole batches are
// taken until a write succeeds, so an outage does not split the backlog
// into one small insert per interval.
func (l *loopState[T]) takeMore() {
	l.take(false)
	if l.cutDue && l.failures == 0 && l.retryC == nil && len(l.held) == 0 && l.inflight < l.b.opts.Writers {
		l.take(true)
		l.cutDue = false
	}
	l.start()
}

// flush answers Flush: every row added before Flush was called is queued
// by now; it writes at least that many, in rounds when they exceed
// MaxBuffered.
func (l *loopState[T]) flush(ctx context.Context) error {
	b := l.b
	l.await()
	b.mu.Lock()
	want := len(b.ready)
	if len(b.cur) > 0 {
		want++
	}
	b.mu.Unlock()
	for {
		want -= l.take(true)
		if err := l.writeHeld(ctx); err != nil || want <= 0 {
			return err
		}
	}
}

// closeFlush writes everything left, retrying with backoff until
// CloseTimeout; rows it cannot write are counted as dropped.
func (l *loopState[T]) closeFlush() error {
	b := l.b
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.CloseTimeout)
	defer cancel()
	wait := retryBackoff(b.opts.RetryMin, b.opts.RetryMax)
	for {
		l.take(true)
		err := l.writeHeld(ctx)
		if err == nil && b.queuedRows() == 0 {
			return nil
		}
		if err == nil {
			continue // more queued rows than MaxBuffered: keep going
		}
		t := time.NewTimer(wait.NextBackOff())
		select {
		case <-ctx.Done():
			t.Stop()
			b.mu.Lock()
			lost := int64(l.heldRows + b.queued)
			b.cur, b.ready, b.queued = nil, nil, 0
			b.mu.Unlock()
			b.dropped.Add(lost)
			l.held, l.heldRows = nil, 0
			return fmt.Errorf("close: %d rows unwritten: %w", lost, err)
		case <-t.C:
		}
	}
}
