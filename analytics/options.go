package analytics

import (
	"context"
	"errors"
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
	// MaxBuffered bounds the rows the writer loop holds, in flight or
	// waiting after a failed write (default 10×BatchSize, never less than
	// BatchSize). Once reached, the loop stops taking rows from the queue,
	// so the queue fills and Add drops: memory stays bounded by
	// MaxBuffered+QueueSize rows.
	MaxBuffered int
	// Writers is how many batch writes may be in flight at once (default
	// 1). With one, rows reach the store in the order they were added;
	// more overlap the round trips of a store that ingests in parallel
	// (ClickHouse) at the cost of that order. The loop keeps taking rows
	// from the queue while writes run either way.
	Writers int
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
	if o.Writers <= 0 {
		o.Writers = 1
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
// It must not keep rows after it returns (the Batcher reuses the buffer),
// and with Writers > 1 it is called from several goroutines at once.
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
