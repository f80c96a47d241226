package passwd

import (
	"runtime"
	"sync/atomic"

	"docflow"
)

// Limited runs the hashes and verifications of a hasher a few at a time:
// each costs about 40 ms of CPU and 19 MiB, and they come from requests
// anyone may send (a sign-in, a reset), so without a bound a burst of them
// takes every core and as much memory as it likes. At most concurrency run
// at once; up to queue more wait their turn (with concurrency running, the
// last waits about queue/concurrency hashing times); one more is refused
// at once with ERATELIMIT (RetryAfter 1 second), which the API answers
// with 429. NeedsRehash costs nothing and is not limited.
type Limited struct {
	h     docflow.PasswordHasher
	slots chan struct{}
	queue int64

	waiting atomic.Int64
	runs    atomic.Int64 // hashes and verifications started
	refused atomic.Int64
}

var _ docflow.PasswordHasher = (*Limited)(nil)

// busy is the error of a hash or verification refused because the queue
// is full.
func busy() error {
	return &docflow.Error{Code: docflow.ERATELIMIT, Message: "Too many sign-ins at once; try again in a moment", RetryAfter: 1}
}

// Limit wraps h: concurrency at once (0 or less: the number of cores),
// and queue waiting (less than 0 counts as 0: refused whenever all run).
func Limit(h docflow.PasswordHasher, concurrency, queue int) *Limited {
	if concurrency <= 0 {
		concurrency = runtime.GOMAXPROCS(0)
	}
	return &Limited{h: h, slots: make(chan struct{}, concurrency), queue: int64(max(queue, 0))}
}

// Hash is h.Hash within the limit; ERATELIMIT when the queue is full.
func (l *Limited) Hash(password string) (string, error) {
	if err := l.acquire(); err != nil {
		return "", err
	}
	defer l.release()
	return l.h.Hash(password)
}

// Verify is h.Verify within the limit; ERATELIMIT when the queue is full.
func (l *Limited) Verify(password, hash string) (bool, error) {
	if err := l.acquire(); err != nil {
		return false, err
	}
	defer l.release()
	return l.h.Verify(password, hash)
}

// NeedsRehash is h.NeedsRehash.
func (l *Limited) NeedsRehash(hash string) bool { return l.h.NeedsRehash(hash) }

func (l *Limited) acquire() error {
	select {
	case l.slots <- struct{}{}:
	default:
		if l.waiting.Add(1) > l.queue {
			l.waiting.Add(-1)
			l.refused.Add(1)
			return busy()
		}
		l.slots <- struct{}{}
		l.waiting.Add(-1)
	}
	l.runs.Add(1)
	return nil
}

func (l *Limited) release() { <-l.slots }

// LimitStats are a Limited's counts since it was made.
type LimitStats struct {
	// Runs are the hashes and verifications started; Refused those
	// refused (ERATELIMIT); Waiting those waiting now; Running those running
	// now.
	Runs, Refused    int64
	Waiting, Running int
}

// Stats returns the counts (for /metrics).
func (l *Limited) Stats() LimitStats {
	return LimitStats{Runs: l.runs.Load(), Refused: l.refused.Load(), Waiting: int(l.waiting.Load()), Running: len(l.slots)}
}
