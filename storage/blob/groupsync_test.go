package blob

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A waiter is released only by a flush that began after it called wait,
// concurrent waiters share flushes, and a failed flush fails the waiters
// it should have served.
func TestGroupSync(t *testing.T) {
	var flushes atomic.Int64
	var begun atomic.Int64 // time a flush began, in ns
	fail := atomic.Bool{}
	g := newGroupSync(func() error {
		begun.Store(time.Now().UnixNano())
		flushes.Add(1)
		time.Sleep(2 * time.Millisecond)
		if fail.Load() {
			return errors.New("disk gone")
		}
		return nil
	})
	const waiters = 64
	var wg sync.WaitGroup
	var late atomic.Int64
	for i := 0; i < waiters; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				called := time.Now().UnixNano()
				if err := g.wait(); err != nil {
					t.Error(err)
					return
				}
				// The flush that released this waiter (the last one to
				// begin before it returned) began after the call.
				if begun.Load() < called {
					late.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if late.Load() > 0 {
		t.Fatalf("%d waits released by a flush that began before them", late.Load())
	}
	if n := flushes.Load(); n >= waiters*10/2 {
		t.Fatalf("%d flushes for %d waits: not shared", n, waiters*10)
	}
	fail.Store(true)
	if err := g.wait(); err == nil {
		t.Fatal("a failed flush was not reported")
	}
	fail.Store(false)
	if err := g.wait(); err != nil {
		t.Fatalf("the next flush succeeded, yet: %v", err)
	}
}
