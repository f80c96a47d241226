package pipeline

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Requests arriving while the flushers are busy share the next batch, and
// every caller gets its own answer.
func TestBatcherGroupsWhileBusyAndAnswersEach(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	b := newBatcher(1, 8, func(_ context.Context, reqs []int) []answer[int] {
		mu.Lock()
		sizes = append(sizes, len(reqs))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-release // hold the only flusher so that the others queue up
		}
		out := make([]answer[int], len(reqs))
		for i, r := range reqs {
			out[i].v = r * 10
			if r == 7 {
				out[i].err = errors.New("seven")
			}
		}
		return out
	})
	go b.run(ctx)

	type res struct {
		req, v int
		err    error
	}
	results := make(chan res, 20)
	call := func(r int) {
		v, err := b.do(ctx, r)
		results <- res{r, v, err}
	}
	go call(0)
	for {
		mu.Lock()
		n := len(sizes)
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for r := 1; r <= 12; r++ {
		go call(r)
	}
	for {
		b.mu.Lock()
		n := len(b.queue)
		b.mu.Unlock()
		if n == 12 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range 13 {
		r := <-results
		if r.req == 7 {
			if r.err == nil {
				t.Fatal("request 7: no error")
			}
			continue
		}
		if r.err != nil || r.v != r.req*10 {
			t.Fatalf("request %d: %d %v", r.req, r.v, r.err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sizes) != 3 || sizes[0] != 1 || sizes[1] != 8 || sizes[2] != 4 {
		t.Fatalf("batch sizes %v, want [1 8 4]", sizes)
	}
	// The counters behind Engine.GroupStats saw the same batches.
	if n, reqs := b.batches.Load(), b.requests.Load(); n != 3 || reqs != 13 {
		t.Fatalf("counted %d batches of %d requests, want 3 of 13", n, reqs)
	}
}

// A caller whose context ends stops waiting; queued requests fail when the
// batcher stops.
func TestBatcherStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := newBatcher(1, 8, func(_ context.Context, reqs []int) []answer[int] {
		return make([]answer[int], len(reqs))
	})
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := b.do(cctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	done := make(chan struct{})
	go func() { b.run(ctx); close(done) }()
	cancel()
	<-done
	b.mu.Lock()
	n := len(b.queue)
	b.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d requests left queued", n)
	}
}
