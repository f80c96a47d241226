package httpx

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRetryDo(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")

	n := 0
	err := Retry{Attempts: 3, Backoff: time.Millisecond}.Do(ctx, func(context.Context) error { n++; return boom })
	if n != 3 || !errors.Is(err, boom) || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Fatalf("used up: %d tries, %v", n, err)
	}

	n = 0
	err = Retry{Attempts: 5, Backoff: time.Millisecond}.Do(ctx, func(context.Context) error {
		n++
		if n == 2 {
			return Permanent(boom)
		}
		return errors.New("again")
	})
	if n != 2 || err != boom {
		t.Fatalf("permanent: %d tries, %v", n, err)
	}

	n = 0
	err = Retry{Attempts: 1}.Do(ctx, func(context.Context) error { n++; return Permanent(boom) })
	if n != 1 || err != boom {
		t.Fatalf("permanent on the only try: %d tries, %v", n, err)
	}

	n = 0
	start := time.Now()
	err = Retry{Attempts: 3, Backoff: 20 * time.Millisecond}.Do(ctx, func(context.Context) error {
		n++
		if n < 3 {
			return boom
		}
		return nil
	})
	if err != nil || n != 3 || time.Since(start) < 60*time.Millisecond {
		t.Fatalf("success on the third try after 20+40 ms: %d tries, %v, %v", n, err, time.Since(start))
	}

	cctx, cancel := context.WithCancel(ctx)
	n = 0
	err = Retry{Attempts: 5, Backoff: time.Hour}.Do(cctx, func(context.Context) error {
		n++
		time.AfterFunc(10*time.Millisecond, cancel)
		return boom
	})
	if n != 1 || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("cancelled while waiting: %d tries, %v", n, err)
	}

	n = 0
	err = Retry{Attempts: 2, Timeout: 10 * time.Millisecond}.Do(ctx, func(actx context.Context) error {
		n++
		<-actx.Done()
		return actx.Err()
	})
	if n != 2 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("each attempt under its own timeout: %d tries, %v", n, err)
	}
}
