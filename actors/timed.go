package actors

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// abandonGrace is how long a job whose context ended may take to return
// before it is abandoned.
const abandonGrace = 10 * time.Millisecond

// Timed is the outcome of RunTimed.
type Timed[R any] struct {
	Value R
	// Err is fn's error (wrapped in ErrTimeout when its deadline passed),
	// a *PanicError, or, for an abandoned run, ErrTimeout or the cause of
	// ctx's cancellation.
	Err error
	// Abandoned: fn ignored its context and still runs on its goroutine.
	Abandoned bool
	Duration  time.Duration
}

// RunTimed runs fn on a goroutine of its own with a context that ends at
// timeout (0 = none) or with ctx, and waits for it. A panic in fn becomes a
// *PanicError. When the context ends, fn has a short grace to return; a fn
// that ignores its context is abandoned (its goroutine runs on, its result is
// dropped) so that the caller, an actor, is not held hostage by it.
//
// This goroutine is the one an actor spends per timed job: hollywood gives an
// actor no way to interrupt its own receive.
func RunTimed[R any](ctx context.Context, timeout time.Duration, fn func(context.Context) (R, error)) Timed[R] {
	var cancel context.CancelFunc
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()

	start := time.Now()
	done := make(chan Timed[R], 1) // buffered: an abandoned run must not leak on send
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- Timed[R]{Err: NewPanicError(v)}
			}
		}()
		v, err := fn(ctx)
		done <- Timed[R]{Value: v, Err: err}
	}()
	finish := func(t Timed[R]) Timed[R] {
		t.Duration = time.Since(start)
		if t.Err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Err = fmt.Errorf("%w after %v: %w", ErrTimeout, timeout, t.Err)
		}
		return t
	}
	select {
	case t := <-done:
		return finish(t)
	case <-ctx.Done():
	}
	grace := time.NewTimer(abandonGrace)
	defer grace.Stop()
	select {
	case t := <-done: // fn honoured its context
		return finish(t)
	case <-grace.C:
	}
	err := fmt.Errorf("%w after %v", ErrTimeout, timeout)
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("job cancelled: %w", context.Cause(ctx))
	}
	return Timed[R]{Err: err, Abandoned: true, Duration: time.Since(start)}
}
