// Package ratelimit holds a rate limit across every process that shares
// one store (PostgreSQL: postgres.RateLimitStore), without a round trip
// to the store for every request.
//
// # How
//
// The store keeps, per key, a sliding-window counter: the count of the
// current fixed window of the limit's period plus the previous window's
// count weighted by how much of it the sliding window still covers (the
// algorithm the in-memory limiters of http use). A process does not ask
// the store for each request: it leases a batch of permits (a slice of
// the window's budget, counted as used in the store at once) and spends
// them in memory; only when its batch is spent does the next request of
// that key go to the store. A batch is a twentieth of the limit, at least
// 1 and at most 50 (leaseSize): a limit of 100/minute costs one statement
// per 5 requests, one of 20 per minute one per request. Permits lapse at
// the end of the window they were leased in (by the store's clock, read
// before the statement was sent, so a permit never outlives its window).
// A refusal is remembered for a fiftieth of the period (at most a second,
// refuseFor), so a client hammering a full window costs the store little.
//
// # Accuracy
//
// Leased permits are counted before they are spent, so the processes
// together never admit more than the store allows: at most the limit in
// any fixed window, and the sliding estimate never above the limit at a
// lease. Two edges let through more, each bounded:
//   - a window's first lease reads the previous window's count as of its
//     statement; a lease of another process in flight at that instant is
//     not weighed (at most one batch per other process: (P−1) × leaseSize
//     at a window boundary, P the number of processes);
//   - the sliding estimate assumes the previous window's requests were
//     spread evenly; requests bunched at its end let up to twice the
//     limit through in the worst span of one period (as the in-memory
//     limiter does; a burst inside one window is held to the limit).
//
// The other way, a process may refuse early: permits leased and not
// spent by other processes are lost to it, at most (P−1) × leaseSize per
// window, and a remembered refusal may outlast a slot freed meanwhile by
// refuseFor.
//
// # When the store fails
//
// Take returns the error and the caller applies its own in-memory limit
// (fail open to a per-process limit): an outage of the database must not
// take the API down with it, and each process still holds its clients to
// the limit alone. One warning is logged when the store fails and one
// line when it answers again; for storeRetry after a failure no request
// waits on the store.
package ratelimit

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Store is the shared budget (postgres.RateLimitStore).
type Store interface {
	// ReserveRate leases up to want permits of key under limit per
	// period and returns how many it granted (0 when the window is full)
	// and how long the current window lasts: granted permits are good
	// until then.
	ReserveRate(ctx context.Context, key string, limit int, period time.Duration, want int) (granted int, resetIn time.Duration, err error)
}

const (
	// storeTimeout bounds one lease statement: a request waits no longer
	// on a slow database before it is limited in memory.
	storeTimeout = 2 * time.Second
	// storeRetry is how long after a failure the store is left alone.
	storeRetry = 5 * time.Second
	// maxLease bounds a batch of permits.
	maxLease = 50
	shards   = 64
	// sweepAt is the number of keys of a shard (64 of them) past which
	// lapsed ones are dropped, at most every sweepEvery: a full sweep of
	// live keys is not repeated for each new key.
	sweepAt    = 2_000
	sweepEvery = time.Second
)

// ErrUnavailable is returned while the store is left alone after a
// failure.
var ErrUnavailable = errors.New("shared rate limits unavailable")

// leaseSize is the batch of permits a process leases at once.
func leaseSize(limit int) int { return min(max(limit/20, 1), maxLease) }

// refuseFor is how long a refusal by the store is remembered.
func refuseFor(period time.Duration) time.Duration { return min(period/50, time.Second) }

// bucket is one key's permits in this process.
type bucket struct {
	// mu is held across a lease: the other requests of the key wait for
	// its permits instead of each asking the store.
	mu      sync.Mutex
	limit   int
	period  time.Duration
	permits int
	// until is when the permits lapse: the end of their window.
	until time.Time
	// refusedUntil is how long the store's last refusal stands.
	refusedUntil time.Time
}

// Shared is a rate limiter over a Store, safe for concurrent use.
type Shared struct {
	store  Store
	log    zerolog.Logger
	now    func() time.Time
	shards [shards]struct {
		sync.Mutex
		m     map[string]*bucket
		swept time.Time
	}
	// down is set while the store is failing; retryAt (UnixNano) is when
	// it is asked again.
	down    atomic.Bool
	retryAt atomic.Int64
}

// New returns a limiter leasing from store; log receives the store's
// failures and recoveries.
func New(store Store, log zerolog.Logger) *Shared {
	if store == nil {
		panic("ratelimit: New needs a Store")
	}
	l := &Shared{store: store, log: log, now: time.Now}
	for i := range l.shards {
		l.shards[i].m = map[string]*bucket{}
	}
	return l
}

// Take spends one permit of key under limit per period. ok is false when
// the shared window is full; retryAfter is then how long until the
// window ends. An error means the store failed or is left alone after a
// failure (ErrUnavailable): the caller decides with its own in-memory
// limit. A limit below 1 or a period below a millisecond admits
// everything.
func (l *Shared) Take(ctx context.Context, key string, limit int, period time.Duration) (ok bool, retryAfter time.Duration, err error) {
	if limit < 1 || period < time.Millisecond {
		return true, 0, nil
	}
	b := l.bucket(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	now := l.now()
	if b.limit != limit || b.period != period {
		// Permits leased under another limit are dropped, not spent.
		b.limit, b.period, b.permits, b.until, b.refusedUntil = limit, period, 0, time.Time{}, time.Time{}
	}
	if b.permits > 0 && now.Before(b.until) {
		b.permits--
		return true, 0, nil
	}
	if now.Before(b.refusedUntil) {
		return false, b.until.Sub(now), nil
	}
	if l.down.Load() && now.UnixNano() < l.retryAt.Load() {
		return false, 0, ErrUnavailable
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	granted, resetIn, err := l.store.ReserveRate(sctx, key, limit, period, leaseSize(limit))
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			l.failed(err)
		}
		return false, 0, err
	}
	l.answered()
	// now was read before the statement was sent: the window ends no
	// earlier than now + resetIn by this clock.
	b.until = now.Add(resetIn)
	if granted <= 0 {
		b.permits = 0
		b.refusedUntil = minTime(b.until, now.Add(refuseFor(period)))
		return false, max(resetIn, 0), nil
	}
	b.permits = granted - 1
	b.refusedUntil = time.Time{}
	return true, 0, nil
}

func (l *Shared) failed(err error) {
	l.retryAt.Store(l.now().Add(storeRetry).UnixNano())
	if !l.down.Swap(true) {
		l.log.Warn().Err(err).Msg("shared rate limits unavailable: each process applies the limits alone until the database answers")
	}
}

func (l *Shared) answered() {
	if l.down.Load() && l.down.Swap(false) {
		l.log.Info().Msg("shared rate limits available again")
	}
}

// bucket returns key's bucket, made on first use.
func (l *Shared) bucket(key string) *bucket {
	h := fnv.New32a()
	h.Write([]byte(key)) //nolint:errcheck // never fails
	sh := &l.shards[h.Sum32()%shards]
	sh.Lock()
	defer sh.Unlock()
	b := sh.m[key]
	if b == nil {
		if now := l.now(); len(sh.m) >= sweepAt && now.Sub(sh.swept) >= sweepEvery {
			sh.swept = now
			sweep(sh.m, now)
		}
		b = &bucket{}
		sh.m[key] = b
	}
	return b
}

// sweep drops the buckets whose permits and refusal have lapsed; one in
// use (locked) stays.
func sweep(m map[string]*bucket, now time.Time) {
	for k, b := range m {
		if !b.mu.TryLock() {
			continue
		}
		if !now.Before(b.until) && !now.Before(b.refusedUntil) {
			delete(m, k)
		}
		b.mu.Unlock()
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
