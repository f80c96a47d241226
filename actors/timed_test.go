package actors

import (
	"context"
	"errors"
	"testing"
	"time"
)

// RunTimed: a job that honours its deadline reports ErrTimeout wrapping its
// own error; one that ignores it is abandoned after a short grace; a
// cancelled parent reports its cause; a panic is a *PanicError.
func TestRunTimed(t *testing.T) {
	waits := func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() }
	r := RunTimed(context.Background(), 20*time.Millisecond, waits)
	if !errors.Is(r.Err, ErrTimeout) || !errors.Is(r.Err, context.DeadlineExceeded) || r.Abandoned {
		t.Fatalf("honouring job: %+v", r)
	}
	release := make(chan struct{})
	defer close(release)
	// The job returns only when the test ends: RunTimed returning at all
	// shows it was abandoned, however slow the machine.
	r = RunTimed(context.Background(), 20*time.Millisecond, func(context.Context) (int, error) { <-release; return 1, nil })
	if !errors.Is(r.Err, ErrTimeout) || !r.Abandoned {
		t.Fatalf("ignoring job: %+v", r)
	}
	stop := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(10*time.Millisecond, func() { cancel(stop) })
	r = RunTimed(ctx, 0, func(context.Context) (int, error) { <-release; return 1, nil })
	if !errors.Is(r.Err, stop) || errors.Is(r.Err, ErrTimeout) || !r.Abandoned {
		t.Fatalf("cancelled job: %+v", r)
	}
	r = RunTimed(context.Background(), time.Second, func(context.Context) (int, error) { panic("boom") })
	var perr *PanicError
	if !errors.As(r.Err, &perr) || perr.Value != "boom" {
		t.Fatalf("panicking job: %+v", r)
	}
	r = RunTimed(context.Background(), time.Second, func(context.Context) (int, error) { return 7, nil })
	if r.Err != nil || r.Value != 7 {
		t.Fatalf("quick job: %+v", r)
	}
}
