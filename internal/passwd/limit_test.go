package passwd

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
)

// slowHasher takes its time, so calls overlap, and records how many ran
// at once.
type slowHasher struct {
	d            time.Duration
	active, peak atomic.Int64
}

func (h *slowHasher) run() {
	n := h.active.Add(1)
	for p := h.peak.Load(); n > p && !h.peak.CompareAndSwap(p, n); p = h.peak.Load() {
	}
	time.Sleep(h.d)
	h.active.Add(-1)
}

func (h *slowHasher) Hash(string) (string, error)         { h.run(); return "h", nil }
func (h *slowHasher) Verify(string, string) (bool, error) { h.run(); return false, nil }
func (*slowHasher) NeedsRehash(string) bool               { return false }

// TestLimitedRefusesBeyondItsQueue: with 2 running and 3 waiting, the
// rest of a burst is refused at once with ERATELIMIT and a Retry-After;
// the others all run, never more than 2 at once.
func TestLimitedRefusesBeyondItsQueue(t *testing.T) {
	h := &slowHasher{d: 200 * time.Millisecond}
	l := Limit(h, 2, 3)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				_, err = l.Verify("pw", "h")
			} else {
				_, err = l.Hash("pw")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	ran, refused := 0, 0
	for err := range errs {
		var e *docflow.Error
		switch {
		case err == nil:
			ran++
		case errors.As(err, &e) && e.Code == docflow.ERATELIMIT && e.RetryAfter >= 1:
			refused++
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	st := l.Stats()
	if ran < 5 || refused == 0 || ran+refused != 20 || st.Runs != int64(ran) || st.Refused != int64(refused) {
		t.Fatalf("%d ran, %d refused; stats %+v", ran, refused, st)
	}
	if p := h.peak.Load(); p > 2 || st.Waiting != 0 || st.Running != 0 {
		t.Fatalf("peak %d at once; stats after %+v", p, st)
	}
}
