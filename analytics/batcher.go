// Package analytics batches metric rows off the hot path and hands them to a
// store (analytics/postgres, analytics/clickhouse) in batches.
//
// The core is Batcher: Add never blocks for I/O; a background loop writes a
// batch when BatchSize rows are buffered or FlushInterval has passed; a failed
// write is retried with exponential backoff while rows stay buffered up to
// MaxBuffered, after which the queue fills and new rows are dropped and
// counted.
package analytics

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"docflow"
)

// Defaults for Options fields left zero.
const (
	DefaultFlushInterval = time.Second
	// DefaultBatchSize: ClickHouse prefers few large inserts (each is a
	// part to merge and a pass through every materialized view).
	DefaultBatchSize    = 50_000
	DefaultRetryMin     = 100 * time.Millisecond
	DefaultRetryMax     = 10 * time.Second
	DefaultWriteTimeout = 30 * time.Second
	DefaultCloseTimeout = 10 * time.Second
)

// ErrClosed is returned by Flush after Close.
var ErrClosed = errors.New("analytics: recorder closed")

// Options tune a Batcher. The zero value gives the defaults.
type Options struct {
	// FlushInterval is the longest a row waits before a write is attempted.
	FlushInterval time.Duration
	// BatchSize is the row count that triggers a write, and the most rows one
	// write carries.
	BatchSize int
	// QueueSize is the capacity of the queue between Add and the writer loop
	// (default 2×BatchSize). When it is full, Add drops the row.
	QueueSize int
	// MaxBuffered bounds the rows the writer loop holds while writes fail
	// (default 10×BatchSize, never less than BatchSize). Once reached, the
	// loop stops taking rows from the queue, so the queue fills and Add drops:
	// memory stays bounded by MaxBuffered+QueueSize rows.
	MaxBuffered int
	// RetryMin and RetryMax bound the exponential backoff between failed writes.
	RetryMin, RetryMax time.Duration
	// WriteTimeout bounds one background write attempt.
	WriteTimeout time.Duration
	// CloseTimeout bounds the final writes made by Close.
	CloseTimeout time.Duration
	// Logger receives write failures and recoveries; nil logs nothing.
	Logger *zerolog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 2 * o.BatchSize
	}
	if o.MaxBuffered <= 0 {
		o.MaxBuffered = 10 * o.BatchSize
	}
	if o.MaxBuffered < o.BatchSize {
		o.MaxBuffered = o.BatchSize
	}
	if o.RetryMin <= 0 {
		o.RetryMin = DefaultRetryMin
	}
	if o.RetryMax <= 0 {
		o.RetryMax = DefaultRetryMax
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = o.RetryMin
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	if o.Logger == nil {
		nop := zerolog.Nop()
		o.Logger = &nop
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Stats are a Batcher's counters since it started. Every row handed to Add is
// Written, Dropped, Rejected, or still Buffered:
// Recorded = Written + Dropped + Rejected + Buffered.
type Stats = docflow.RecorderStats

// WriteFunc writes one batch. It must write all rows or none: a batch that
// returns an error is retried whole later, unless the error is Permanent.
type WriteFunc[T any] func(ctx context.Context, rows []T) error

// Permanent marks err as one that retrying the same rows cannot fix (a value
// the store refuses). The Batcher then bisects the batch, writes the rows the
// store accepts and counts the others as Rejected, so one bad row neither
// blocks the buffer nor takes its batch down with it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err was marked by Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Batcher buffers rows of type T and writes them in batches from one
// background goroutine, which Close stops.
type Batcher[T any] struct {
	write WriteFunc[T]
	opts  Options

	// mu guards closed against Add racing Close: Add holds the read lock while
	// it enqueues, so once Close holds the write lock no row can slip into the
	// queue after the loop's final drain.
	mu     sync.RWMutex
	closed bool

	queue   chan T
	flushes chan flushRequest
	stop    chan struct{}
	// stopCtx is cancelled by Close so a background write in flight does not
	// hold shutdown beyond CloseTimeout; its rows are retried by Close.
	stopCtx    context.Context
	cancelStop context.CancelFunc
	done       chan struct{}
	once       sync.Once
	err        error // result of the final flush, set before done closes

	recorded, written, dropped, rejected, writeErrors atomic.Int64
	loggedDrops                                       int64 // dropped as last logged (loop only)
}

// logDrops logs, at most once per FlushInterval, how many rows were
// dropped since the last time it logged.
func (b *Batcher[T]) logDrops() {
	d := b.dropped.Load()
	if d == b.loggedDrops {
		return
	}
	b.opts.Logger.Warn().Int64("dropped", d-b.loggedDrops).Int64("dropped_total", d).
		Int("bound", b.opts.QueueSize+b.opts.MaxBuffered).Msg("analytics metrics dropped: buffer full")
	b.loggedDrops = d
}

type flushRequest struct {
	ctx   context.Context
	reply chan error
}

// NewBatcher starts the background writer loop; Close stops it.
func NewBatcher[T any](write WriteFunc[T], opts Options) *Batcher[T] {
	if write == nil {
		panic("analytics: NewBatcher with nil WriteFunc")
	}
	opts = opts.withDefaults()
	stopCtx, cancelStop := context.WithCancel(context.Background())
	b := &Batcher[T]{
		stopCtx:    stopCtx,
		cancelStop: cancelStop,
		write:      write,
		opts:       opts,
		queue:      make(chan T, opts.QueueSize),
		flushes:    make(chan flushRequest),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	go b.loop()
	return b
}

// Add queues one row. It never blocks: when the queue is full, or after
// Close, the row is dropped and counted. It reports whether the row was queued.
func (b *Batcher[T]) Add(row T) bool {
	b.recorded.Add(1)
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		b.dropped.Add(1)
		return false
	}
	select {
	case b.queue <- row:
		return true
	default:
		b.dropped.Add(1)
		return false
	}
}

// Flush writes every row added before the call. Rows that fail to write stay
// buffered for the background retry, and the error is returned.
func (b *Batcher[T]) Flush(ctx context.Context) error {
	req := flushRequest{ctx: ctx, reply: make(chan error, 1)}
	select {
	case b.flushes <- req:
	case <-b.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops taking rows, writes what is buffered (bounded by CloseTimeout),
// and stops the background loop. Rows still unwritten are counted as dropped
// and reported in the error. Close is idempotent.
func (b *Batcher[T]) Close() error {
	b.once.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		b.cancelStop()
		close(b.stop)
	})
	<-b.done
	return b.err
}

// Stats returns the counters.
func (b *Batcher[T]) Stats() Stats {
	// Read the outcomes before the total, so Buffered is never negative.
	written, dropped, rejected := b.written.Load(), b.dropped.Load(), b.rejected.Load()
	recorded := b.recorded.Load()
	return Stats{
		Recorded:    recorded,
		Written:     written,
		Dropped:     dropped,
		Rejected:    rejected,
		WriteErrors: b.writeErrors.Load(),
		// NOTE: derived rather than tracked, so it never disagrees with the
		// other counters while rows move from the queue to a write.
		Buffered: recorded - written - dropped - rejected,
	}
}

func (b *Batcher[T]) loop() {
	defer close(b.done)
	var (
		pending  = make([]T, 0, b.opts.BatchSize)
		ticker   = time.NewTicker(b.opts.FlushInterval)
		retry    *time.Timer // non-nil while backing off after a failure
		retryC   <-chan time.Time
		failures int
		// again is the batch whose write failed as a whole: the next
		// write retries exactly its rows.
		again retryBatch
	)
	defer ticker.Stop()

	// flush writes pending in batches (only full ones when full is set, so a
	// size-triggered write leaves the remainder to the interval); on the first
	// failure it keeps the rest and arms the backoff timer.
	flush := func(ctx context.Context, full bool) error {
		for len(pending) > 0 && (!full || len(pending) >= b.opts.BatchSize || again.rows > 0) {
			n := min(len(pending), b.opts.BatchSize)
			if again.rows > 0 {
				// The same rows as the failed attempt, under its token,
				// so a store can tell a retry of a write that landed.
				n = min(again.rows, len(pending))
				again.attempt++
			} else {
				again = retryBatch{token: newToken(), attempt: 1}
			}
			done, err := b.writeRows(withBatch(ctx, again.token, again.attempt), pending[:n])
			pending = compact(pending, done)
			again.rows = 0
			if err != nil && done == 0 {
				again.rows = n
			}
			if err != nil {
				failures++
				d := backoff(b.opts.RetryMin, b.opts.RetryMax, failures)
				b.opts.Logger.Warn().Err(err).Int("rows", len(pending)).
					Int("attempt", failures).Dur("retry_in", d).Msg("analytics write failed")
				if retry == nil {
					retry = time.NewTimer(d)
				} else {
					retry.Reset(d)
				}
				retryC = retry.C
				return err
			}
			if failures > 0 {
				b.opts.Logger.Info().Int("failed_attempts", failures).Msg("analytics writes recovered")
			}
			failures = 0
			retryC = nil
		}
		return nil
	}
	backgroundFlush := func(full bool) {
		ctx, cancel := context.WithTimeout(b.stopCtx, b.opts.WriteTimeout)
		defer cancel()
		_ = flush(ctx, full) // logged and counted in flush; rows stay pending
	}
	// drain moves queued rows into pending, as far as MaxBuffered allows,
	// and returns how many it moved.
	drain := func() int {
		moved := 0
		for len(pending) < b.opts.MaxBuffered {
			select {
			case row := <-b.queue:
				pending = append(pending, row)
				moved++
			default:
				return moved
			}
		}
		return moved
	}

	for {
		// NOTE: while pending is at its bound the loop stops reading the
		// queue; the queue then fills and Add drops, which is what bounds
		// memory during an outage.
		queue := b.queue
		if len(pending) >= b.opts.MaxBuffered {
			queue = nil
		}
		select {
		case row := <-queue:
			pending = append(pending, row)
			if len(pending) >= b.opts.BatchSize && retryC == nil {
				drain()
				backgroundFlush(true)
			}
		case <-ticker.C:
			if retryC == nil {
				drain()
				backgroundFlush(false)
			}
			b.logDrops()
		case <-retryC:
			retryC = nil
			drain()
			backgroundFlush(false)
		case req := <-b.flushes:
			// Every row added before Flush was called is queued by now; write
			// at least that many, in rounds when they exceed MaxBuffered.
			want := len(b.queue)
			var err error
			for {
				want -= drain()
				ctx, cancel := context.WithTimeout(req.ctx, b.opts.WriteTimeout)
				err = flush(ctx, false)
				cancel()
				if err != nil || want <= 0 {
					break
				}
			}
			req.reply <- err
		case <-b.stop:
			b.err = b.closeFlush(&pending, drain, flush)
			if retry != nil {
				retry.Stop()
			}
			return
		}
	}
}

// closeFlush writes everything left, retrying with backoff until
// CloseTimeout; rows it cannot write are counted as dropped.
func (b *Batcher[T]) closeFlush(pending *[]T, drain func() int, flush func(context.Context, bool) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.CloseTimeout)
	defer cancel()
	var err error
	for attempt := 1; ; attempt++ {
		drain()
		if err = flush(ctx, false); err == nil && len(b.queue) == 0 {
			return nil
		}
		if err == nil {
			continue // more queued rows than MaxBuffered: keep going
		}
		t := time.NewTimer(backoff(b.opts.RetryMin, b.opts.RetryMax, attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			lost := int64(len(*pending) + len(b.queue))
			b.dropped.Add(lost)
			for len(b.queue) > 0 {
				<-b.queue
			}
			*pending = nil
			return fmt.Errorf("close: %d rows unwritten: %w", lost, err)
		case <-t.C:
		}
	}
}

// writeRows writes rows in one write; when the store rejects them for good
// it bisects to write the acceptable ones and reject the rest. It returns how
// many leading rows are settled (written or rejected) and the first error that
// a retry may fix, which leaves the rows after the settled prefix pending.
func (b *Batcher[T]) writeRows(ctx context.Context, rows []T) (int, error) {
	err := b.write(ctx, rows)
	if err == nil {
		b.written.Add(int64(len(rows)))
		return len(rows), nil
	}
	b.writeErrors.Add(1)
	if !IsPermanent(err) {
		return 0, fmt.Errorf("write %d rows: %w", len(rows), err)
	}
	if len(rows) == 1 {
		b.rejected.Add(1)
		b.opts.Logger.Error().Err(err).Msg("analytics row rejected by the store")
		return 1, nil
	}
	mid := len(rows) / 2
	// Each half is a batch of its own for BatchToken: a retry of the whole
	// must not take a half that landed for the whole.
	tok, attempt, _ := BatchToken(ctx)
	done, err := b.writeRows(withBatch(ctx, tok+"l", attempt), rows[:mid])
	if err != nil {
		return done, err
	}
	done, err = b.writeRows(withBatch(ctx, tok+"r", attempt), rows[mid:])
	return mid + done, err
}

// compact drops the first n rows, reusing the backing array, and clears the
// vacated tail so written rows can be collected.
func compact[T any](s []T, n int) []T {
	m := copy(s, s[n:])
	clear(s[m:])
	return s[:m]
}

// backoff returns min·2^(attempt-1) capped at max, with ±20 % jitter.
func backoff(lo, hi time.Duration, attempt int) time.Duration {
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	jitter := time.Duration(float64(d) * 0.2 * (2*rand.Float64() - 1))
	return d + jitter
}
