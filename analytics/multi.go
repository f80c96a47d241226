package analytics

import (
	"context"
	"errors"

	"docflow"
)

// Multi sends every metric to each recorder; Flush, Ping and Close call each
// and join their errors.
type Multi []docflow.Recorder

var _ docflow.Recorder = Multi(nil)

// Record records m in each recorder.
func (m Multi) Record(metric docflow.Metric) {
	for _, r := range m {
		r.Record(metric)
	}
}

// Flush flushes each recorder.
func (m Multi) Flush(ctx context.Context) error {
	var errs []error
	for _, r := range m {
		errs = append(errs, r.Flush(ctx))
	}
	return errors.Join(errs...)
}

// Ping pings each recorder.
func (m Multi) Ping(ctx context.Context) error {
	var errs []error
	for _, r := range m {
		errs = append(errs, r.Ping(ctx))
	}
	return errors.Join(errs...)
}

// Close closes each recorder.
func (m Multi) Close() error {
	var errs []error
	for _, r := range m {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

// Nop discards every metric; for tests and for analytics switched off.
type Nop struct{}

var _ docflow.Recorder = Nop{}

func (Nop) Record(docflow.Metric)       {}
func (Nop) Flush(context.Context) error { return nil }
func (Nop) Ping(context.Context) error  { return nil }
func (Nop) Close() error                { return nil }
