package analytics

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Batcher buffers rows of type T and writes them in batches from a
// background loop, which Close stops.
//
// Rows are appended to a batch under a mutex (no per-row channel hand-off);
// a full batch is handed to the loop whole. The loop starts up to Writers
// writes at once and keeps taking batches from the queue while they run, so
// the producer never waits for a write and a store's round trip overlaps
// the filling of the next batch.
type Batcher[T any] struct {
	write WriteFunc[T]
	opts  Options

	// mu guards the queue (cur, ready, queued), the recycled buffers and
	// closed. Add holds it while it appends, so once Close has set closed no
	// row can slip into the queue after the loop's final drain.
	mu     sync.Mutex
	closed bool
	cur    []T   // the batch being filled, < BatchSize rows
	ready  [][]T // full batches waiting for the loop, oldest first
	queued int   // rows in cur and ready, at most QueueSize
	free   [][]T // emptied buffers, for reuse
	// lastLen is the length of the last batch taken from cur: a new buffer
	// starts with that capacity (see buffer).
	lastLen int

	kick    chan struct{} // a batch became ready (capacity 1, never blocks)
	results chan writeResult[T]
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

// maxFree bounds the recycled buffers kept for reuse, and firstCap is the
// least capacity a new one starts with; it starts with the length of the
// last batch and a quarter more when that is more, so that a flow that
// varies a little fills it without growing it: growing copies every row
// once more into a fresh buffer, which the runtime zeroes first, and was
// most of what Add cost.
//
// NOTE: the collector scans a buffer of metrics (they hold strings) over
// its whole capacity, used or not, at every cycle: buffers sized for a
// full batch up front, or a stock of them kept empty, made every
// collection of a busy process scan tens of megabytes for nothing. So a
// buffer is sized for what the flow last gave, not for a full batch, and
// one is kept.
const (
	maxFree  = 1
	firstCap = 1024
)

// batch is a run of rows the loop writes as one: a failed write is retried
// with exactly its rows under its token (see BatchToken).
type batch[T any] struct {
	rows    []T
	token   string
	attempt int // attempts started so far
}

type writeResult[T any] struct {
	b       *batch[T]
	done    int // leading rows settled (written or rejected)
	written int // of which written
	err     error
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
		kick:       make(chan struct{}, 1),
		results:    make(chan writeResult[T], opts.Writers),
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
	b.mu.Lock()
	if b.closed || b.queued >= b.opts.QueueSize {
		b.mu.Unlock()
		b.dropped.Add(1)
		return false
	}
	if b.cur == nil {
		b.cur = b.buffer()
	}
	if n := len(b.cur); n == cap(b.cur) {
		// Doubled, not grown by append's quarter for a large slice: a
		// buffer that grows from firstCap to a flush's worth of rows is
		// then copied about once in all rather than four times (with
		// every copy a fresh allocation the runtime zeroes, and the
		// collector's assists charged to it). n < BatchSize: a full
		// batch left cur above.
		grown := make([]T, n, n+min(max(n, 1), b.opts.BatchSize-n))
		copy(grown, b.cur)
		b.cur = grown
	}
	b.cur = append(b.cur, row)
	b.queued++
	full := len(b.cur) >= b.opts.BatchSize
	if full {
		b.ready = append(b.ready, b.cur)
		b.cur, b.lastLen = nil, len(b.ready[len(b.ready)-1])
	}
	b.mu.Unlock()
	if full {
		select {
		case b.kick <- struct{}{}:
		default: // the loop has a wake-up pending already
		}
	}
	return true
}

// buffer returns an empty buffer for a batch; b.mu is held.
func (b *Batcher[T]) buffer() []T {
	want := min(b.opts.BatchSize, max(firstCap, b.lastLen+b.lastLen/4))
	if n := len(b.free); n > 0 {
		buf := b.free[n-1]
		b.free[n-1] = nil
		b.free = b.free[:n-1]
		// One kept while it has an eighth to spare. One the flow has
		// outgrown, or one from a burst far above it (scanned whole at
		// every collection), is left to the collector.
		if c := cap(buf); c >= min(b.opts.BatchSize, b.lastLen+b.lastLen/8) && c <= 2*want {
			return buf
		}
	}
	return make([]T, 0, want)
}

// recycle keeps the buffer of a written batch for reuse, cleared so the
// rows it held can be collected.
func (b *Batcher[T]) recycle(rows []T) {
	clear(rows)
	b.mu.Lock()
	if len(b.free) < maxFree {
		b.free = append(b.free, rows[:0])
	}
	b.mu.Unlock()
}

// take moves queued batches to the loop's held list, oldest first, while
// the rows held stay within MaxBuffered; with cut it also takes the batch
// being filled. It returns how many batches it took.
func (b *Batcher[T]) take(held *[]*batch[T], heldRows *int, cut bool) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for {
		var rows []T
		switch {
		case len(b.ready) > 0:
			rows = b.ready[0]
		case cut && len(b.cur) > 0:
			rows = b.cur
		default:
			return n
		}
		if *heldRows > 0 && *heldRows+len(rows) > b.opts.MaxBuffered {
			return n
		}
		if len(b.ready) > 0 {
			b.ready[0] = nil
			b.ready = b.ready[1:]
		} else {
			b.cur, b.lastLen = nil, len(rows)
		}
		b.queued -= len(rows)
		*held = append(*held, &batch[T]{rows: rows})
		*heldRows += len(rows)
		n++
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

// queuedRows is how many rows wait in the queue (not yet taken by the loop).
func (b *Batcher[T]) queuedRows() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queued
}

// loop owns the held batches (loopState): those taken from the queue and
// not yet written, a failed one first. Background writes run in
// goroutines of their own and report to results; Flush and Close write
// synchronously once the writes in flight have reported.
func (b *Batcher[T]) loop() {
	defer close(b.done)
	l := &loopState[T]{b: b, backoff: retryBackoff(b.opts.RetryMin, b.opts.RetryMax)}
	ticker := time.NewTicker(b.opts.FlushInterval)
	defer ticker.Stop()
	for {
		select {
		case <-b.kick:
			l.takeMore()
		case r := <-b.results:
			l.inflight--
			l.settle(r)
			l.takeMore()
			// NOTE: counted as written only now, once the loop has let go
			// of the rows and taken what waits in the queue: until then
			// they still hold their place under MaxBuffered, and Buffered
			// (the rows recorded and not yet written) must not show room
			// the queue does not have, or a producer that paces itself by
			// it overfills the queue and drops.
			b.written.Add(int64(r.written))
		case <-ticker.C:
			l.cutDue = true
			l.takeMore()
			b.logDrops()
		case <-l.retryC:
			l.retryC = nil
			l.takeMore()
		case req := <-b.flushes:
			req.reply <- l.flush(req.ctx)
			l.start()
		case <-b.stop:
			l.await()
			b.err = l.closeFlush()
			if l.retry != nil {
				l.retry.Stop()
			}
			return
		}
	}
}

// writeBatch makes one attempt at bt under its token (a new one for its
// first attempt). It returns how many leading rows are settled, how many
// of them were written (the caller counts them) and the error.
func (b *Batcher[T]) writeBatch(ctx context.Context, bt *batch[T]) (int, int, error) {
	if bt.attempt == 0 {
		bt.token = newToken()
	}
	bt.attempt++
	written := 0
	done, err := b.writeRows(withBatch(ctx, bt.token, bt.attempt), bt.rows, &written)
	return done, written, err
}

// writeRows writes rows in one write; when the store rejects them for good
// it bisects to write the acceptable ones and reject the rest. It returns how
// many leading rows are settled (written or rejected) and the first error that
// a retry may fix, which leaves the rows after the settled prefix pending;
// it adds the rows written to *written.
func (b *Batcher[T]) writeRows(ctx context.Context, rows []T, written *int) (int, error) {
	err := b.write(ctx, rows)
	if err == nil {
		*written += len(rows)
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
	done, err := b.writeRows(withBatch(ctx, tok+"l", attempt), rows[:mid], written)
	if err != nil {
		return done, err
	}
	done, err = b.writeRows(withBatch(ctx, tok+"r", attempt), rows[mid:], written)
	return mid + done, err
}

// retryBackoff is the wait before each retry of a failed write: lo,
// 2·lo, 4·lo… capped at hi, each with ±20 % jitter so that processes
// that failed together do not retry together.
func retryBackoff(lo, hi time.Duration) *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{InitialInterval: lo, Multiplier: 2, RandomizationFactor: 0.2, MaxInterval: hi}
}
