package ratelimit_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow/internal/ratelimit"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

func openDB(t *testing.T) *postgres.DB {
	t.Helper()
	db, cleanup, err := postgres.OpenTestDB(context.Background(), "ratelimit")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return db
}

// twoProcesses are two limiters over one database, as two api processes
// have.
func twoProcesses(t *testing.T) (a, b *ratelimit.Shared) {
	db := openDB(t)
	return ratelimit.New(postgres.NewRateLimitStore(db), zerolog.Nop()),
		ratelimit.New(postgres.NewRateLimitStore(db), zerolog.Nop())
}

// TestTwoProcessesShareOneLimit: requests alternating between two
// processes are admitted up to the limit together, not twice it.
func TestTwoProcessesShareOneLimit(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	ctx := context.Background()
	const limit = 40 // leases of 2
	admitted := 0
	for i := range 2 * limit {
		l := a
		if i%2 == 1 {
			l = b
		}
		ok, retry, err := l.Take(ctx, "alice", limit, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			admitted++
		} else if retry <= 0 || retry > 24*time.Hour {
			t.Fatalf("refused with retry after %s", retry)
		}
	}
	// The bound: permits leased by one process and unspent when the other
	// is refused, at most one lease (2).
	if admitted > limit || admitted < limit-2 {
		t.Fatalf("two processes admitted %d, want %d (at least %d)", admitted, limit, limit-2)
	}
	if ok, _, _ := a.Take(ctx, "bob", limit, 24*time.Hour); !ok {
		t.Fatal("another key refused")
	}
}

// TestConcurrentBurstAcrossProcesses: a burst from many goroutines in
// each of two processes never passes the limit, and falls short of it by
// at most the documented bound: one lease of the other process.
func TestConcurrentBurstAcrossProcesses(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	const limit = 100 // leases of 5
	var admitted int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 16 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				ok, _, err := l.Take(context.Background(), "burst", limit, 24*time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if admitted > limit || admitted < limit-5 {
		t.Fatalf("a burst of 320 across two processes admitted %d, want %d (at least %d)", admitted, limit, limit-5)
	}
}

// TestWindowSlides: a full window refuses, with a wait of at most the
// period, and requests are admitted again once the window has moved on
// (the store's tests check the previous window's weight).
func TestWindowSlides(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	ctx := context.Background()
	take := func(l *ratelimit.Shared) (bool, time.Duration) {
		ok, retry, err := l.Take(ctx, "slide", 3, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return ok, retry
	}
	refused := false
	for i := 0; i < 20 && !refused; i++ {
		l := a
		if i%2 == 1 {
			l = b
		}
		ok, retry := take(l)
		if !ok {
			refused = true
			if retry <= 0 || retry > time.Second {
				t.Fatalf("refused with a wait of %s, want within the period", retry)
			}
		}
	}
	if !refused {
		t.Fatal("20 requests in quick succession under 3/second, none refused")
	}
	testsupport.WaitFor(t, time.Minute, "the window to slide on", func() bool { ok, _ := take(b); return ok })
}

// TestStoreDownFailsOpen: when the database fails, Take returns the error
// (the caller limits in memory), logs one warning, and leaves the store
// alone for a while: later calls fail at once, without a statement.
func TestStoreDownFailsOpen(t *testing.T) {
	t.Parallel()
	db, cleanup, err := postgres.OpenTestDB(context.Background(), "ratelimit")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	var logs bytes.Buffer
	var logMu sync.Mutex
	l := ratelimit.New(postgres.NewRateLimitStore(db), zerolog.New(syncWriter{&logs, &logMu}))
	if ok, _, err := l.Take(context.Background(), "k", 10, time.Minute); !ok || err != nil {
		t.Fatalf("first take: %v %v", ok, err)
	}
	db.Close()
	// The first lease holds 1 permit (10/20 rounds to 1): the next asks.
	if _, _, err := l.Take(context.Background(), "k", 10, time.Minute); err == nil {
		t.Fatal("no error with the database closed")
	}
	for range 5 {
		if _, _, err := l.Take(context.Background(), "other", 10, time.Minute); !errors.Is(err, ratelimit.ErrUnavailable) {
			t.Fatalf("while down: %v, want ErrUnavailable", err)
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	if n := strings.Count(logs.String(), "shared rate limits unavailable"); n != 1 {
		t.Fatalf("%d warnings, want 1: %s", n, logs.String())
	}
}

type syncWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
