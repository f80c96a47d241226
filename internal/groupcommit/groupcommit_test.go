package groupcommit

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// Requests arriving while the flushers are busy share the next batch, and
// every caller gets its own answer.
func TestGroupsWhileBusyAndAnswersEach(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	b := New(Config[int, int]{Flushers: 1, Max: 8, Flush: func(_ context.Context, reqs []int) []Answer[int] {
		mu.Lock()
		sizes = append(sizes, len(reqs))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-release // hold the only flusher so that the others queue up
		}
		out := make([]Answer[int], len(reqs))
		for i, r := range reqs {
			out[i].V = r * 10
			if r == 7 {
				out[i].Err = errors.New("seven")
			}
		}
		return out
	}})
	go b.Run(ctx)

	type res struct {
		req, v int
		err    error
	}
	results := make(chan res, 20)
	call := func(r int) {
		v, err := b.Do(ctx, r)
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
		if b.Queued() == 12 {
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
	// The counters saw the same batches.
	if n, reqs := b.Stats(); n != 3 || reqs != 13 {
		t.Fatalf("counted %d batches of %d requests, want 3 of 13", n, reqs)
	}
}

// A caller whose context ends stops waiting; queued requests fail when the
// batcher stops.
func TestStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := New(Config[int, int]{Flushers: 1, Max: 8, Flush: func(_ context.Context, reqs []int) []Answer[int] {
		return make([]Answer[int], len(reqs))
	}})
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := b.Do(cctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	cancel()
	<-done
	if n := b.Queued(); n != 0 {
		t.Fatalf("%d requests left queued", n)
	}
}

// Requests with the same key never share a batch: the later ones wait, in
// order, for the next batches, and requests without a key go with the
// first.
func TestKeyKeepsEqualKeysApart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var batches [][]int
	release := make(chan struct{})
	b := New(Config[int, int]{Flushers: 1, Max: 8,
		Key: func(r int) (any, bool) { return r % 10, r >= 10 },
		Flush: func(_ context.Context, reqs []int) []Answer[int] {
			mu.Lock()
			batches = append(batches, append([]int(nil), reqs...))
			first := len(batches) == 1
			mu.Unlock()
			if first {
				<-release
			}
			return make([]Answer[int], len(reqs))
		}})
	go b.Run(ctx)
	done := make(chan struct{}, 10)
	call := func(r int) { b.Do(ctx, r); done <- struct{}{} } //nolint:errcheck
	go call(0)
	for {
		mu.Lock()
		n := len(batches)
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Queued in this order: 11, 21 (same key as 11), 12, 5 (no key), 31 (key 1 again).
	for _, r := range []int{11, 21, 12, 5, 31} {
		go call(r)
		for b.Queued() == 0 || !queuedHas(b, r) {
			time.Sleep(time.Millisecond)
		}
	}
	close(release)
	for range 6 {
		<-done
	}
	mu.Lock()
	defer mu.Unlock()
	want := [][]int{{0}, {11, 12, 5}, {21}, {31}}
	if len(batches) != len(want) {
		t.Fatalf("batches %v, want %v", batches, want)
	}
	for i := range want {
		if !slices.Equal(batches[i], want[i]) {
			t.Fatalf("batches %v, want %v", batches, want)
		}
	}
}

func queuedHas(b *Committer[int, int], r int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.queue {
		if p.req == r {
			return true
		}
	}
	return false
}
