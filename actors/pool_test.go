package actors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow/internal/testsupport"
)

type collector[R any] struct {
	mu      sync.Mutex
	results map[string]Result[R]
}

func newCollector[R any]() *collector[R] { return &collector[R]{results: map[string]Result[R]{}} }

func (c *collector[R]) done(r Result[R]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.results[r.ID]; dup {
		panic("second result for " + r.ID)
	}
	c.results[r.ID] = r
}

func (c *collector[R]) len() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.results) }

func (c *collector[R]) get(id string) Result[R] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.results[id]
}

func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
}

func TestPoolRunsJobsWithBoundedConcurrency(t *testing.T) {
	e := newTestEngine(t)
	var running, peak atomic.Int64
	pool, err := NewPool(e, PoolConfig{Kind: "square", Size: 4, Log: testLogger(t)}, func(_ context.Context, n int) (int, error) {
		r := running.Add(1)
		for {
			p := peak.Load()
			if r <= p || peak.CompareAndSwap(p, r) {
				break
			}
		}
		time.Sleep(100 * time.Microsecond)
		running.Add(-1)
		if n%100 == 99 {
			return 0, fmt.Errorf("no %d", n)
		}
		return n * n, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector[int]()
	const n = 1000
	for i := range n {
		if err := pool.Submit(Job[int, int]{ID: strconv.Itoa(i), Msg: i, Done: col.done}); err != nil {
			t.Fatal(err)
		}
	}
	testsupport.WaitFor(t, time.Minute, "all results", func() bool { return col.len() == n })
	for i := range n {
		r := col.get(strconv.Itoa(i))
		if i%100 == 99 {
			if r.Err == nil {
				t.Fatalf("job %d: no error", i)
			}
			continue
		}
		if r.Err != nil || r.Value != i*i || r.Worker == "" {
			t.Fatalf("job %d: %+v", i, r)
		}
	}
	if p := peak.Load(); p > 4 || p < 2 {
		t.Fatalf("peak concurrency %d, want 2..4", p)
	}
	if err := pool.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := pool.Stats(); s.Busy != 0 || s.Queued != 0 {
		t.Fatalf("stats after close %+v", s)
	}
}

// TestPoolReplyToActor: an actor submits jobs from its receive and gets the
// results as messages, never blocking on a Request.
func TestPoolReplyToActor(t *testing.T) {
	e := newTestEngine(t)
	pool, err := NewPool(e, PoolConfig{Kind: "upper", Size: 2, Log: testLogger(t)}, func(_ context.Context, s string) (string, error) {
		return s + "!", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan map[string]string, 1)
	e.Spawn(func() actor.Receiver {
		results := map[string]string{}
		return receiverFunc(func(c *actor.Context) {
			switch m := c.Message().(type) {
			case actor.Started:
				for i := range 10 {
					id := "j" + strconv.Itoa(i)
					if err := pool.Submit(Job[string, string]{ID: id, Msg: id, ReplyTo: c.PID()}); err != nil {
						t.Error(err)
					}
				}
			case Result[string]:
				results[m.ID] = m.Value
				if len(results) == 10 {
					got <- results
				}
			}
		})
	}, "requester", SpawnOpts(testLogger(t))...)
	select {
	case res := <-got:
		for id, v := range res {
			if v != id+"!" {
				t.Fatalf("%s -> %s", id, v)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no replies")
	}
	_ = pool.Close(context.Background())
}

type receiverFunc func(*actor.Context)

func (f receiverFunc) Receive(c *actor.Context) { f(c) }

func TestPoolTimeout(t *testing.T) {
	e := newTestEngine(t)
	release := make(chan struct{})
	defer close(release)
	pool, err := NewPool(e, PoolConfig{Kind: "slow", Size: 1, JobTimeout: 50 * time.Millisecond, Log: testLogger(t)},
		func(ctx context.Context, mode string) (string, error) {
			switch mode {
			case "ignore": // ignores its context
				<-release
				return "late", nil
			case "honour":
				<-ctx.Done()
				return "", ctx.Err()
			}
			return mode, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector[string]()
	start := time.Now()
	for _, id := range []string{"ignore", "honour", "quick"} {
		if err := pool.Submit(Job[string, string]{ID: id, Msg: id, Done: col.done}); err != nil {
			t.Fatal(err)
		}
	}
	testsupport.WaitFor(t, time.Minute, "three results", func() bool { return col.len() == 3 })
	if el := time.Since(start); el > time.Second {
		t.Fatalf("a single worker took %v: the ignoring job held it", el)
	}
	for _, id := range []string{"ignore", "honour"} {
		if r := col.get(id); !errors.Is(r.Err, ErrTimeout) {
			t.Fatalf("%s: %v, want ErrTimeout", id, r.Err)
		}
	}
	if r := col.get("quick"); r.Err != nil || r.Value != "quick" {
		t.Fatalf("quick: %+v", r)
	}
	if s := pool.Stats(); s.Abandoned != 1 {
		t.Fatalf("abandoned %d, want 1", s.Abandoned)
	}
	// A job-level timeout overrides the pool's.
	if err := pool.Submit(Job[string, string]{ID: "long", Msg: "honour", Timeout: 300 * time.Millisecond, Done: col.done}); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "long result", func() bool { return col.len() == 4 })
	if r := col.get("long"); !errors.Is(r.Err, ErrTimeout) || r.Duration < 250*time.Millisecond {
		t.Fatalf("long: %v after %v", r.Err, r.Duration)
	}
	_ = pool.Close(context.Background())
}

// TestPoolPanics: work that panics far more often than hollywood's restart
// limit yields *PanicError results; a panicking Done callback is contained.
func TestPoolPanics(t *testing.T) {
	e := newTestEngine(t)
	pool, err := NewPool(e, PoolConfig{Kind: "panicky", Size: 2, Log: testLogger(t)}, func(_ context.Context, n int) (int, error) {
		if n%2 == 0 {
			panic(fmt.Sprintf("even %d", n))
		}
		return n, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector[int]()
	for i := range 50 {
		if err := pool.Submit(Job[int, int]{ID: strconv.Itoa(i), Msg: i, Done: col.done}); err != nil {
			t.Fatal(err)
		}
	}
	var cb atomic.Int64
	for i := range 10 {
		_ = pool.Submit(Job[int, int]{ID: "cb" + strconv.Itoa(i), Msg: 1, Done: func(Result[int]) { cb.Add(1); panic("callback") }})
	}
	testsupport.WaitFor(t, time.Minute, "results", func() bool { return col.len() == 50 && cb.Load() == 10 })
	for i := range 50 {
		r := col.get(strconv.Itoa(i))
		var perr *PanicError
		if i%2 == 0 {
			if !errors.As(r.Err, &perr) || perr.Value != fmt.Sprintf("even %d", i) || len(perr.Stack) == 0 {
				t.Fatalf("job %d: %v", i, r.Err)
			}
		} else if r.Err != nil || r.Value != i {
			t.Fatalf("job %d: %+v", i, r)
		}
	}
	if err := pool.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestPoolGracefulClose(t *testing.T) {
	e := newTestEngine(t)
	pool, err := NewPool(e, PoolConfig{Kind: "drain", Size: 2, Log: testLogger(t)}, func(ctx context.Context, n int) (int, error) {
		select {
		case <-time.After(10 * time.Millisecond):
			return n, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector[int]()
	for i := range 20 {
		_ = pool.Submit(Job[int, int]{ID: strconv.Itoa(i), Msg: i, Done: col.done})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := pool.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if col.len() != 20 {
		t.Fatalf("close returned with %d of 20 results", col.len())
	}
	for i := range 20 {
		if r := col.get(strconv.Itoa(i)); r.Err != nil {
			t.Fatalf("job %d: %v", i, r.Err)
		}
	}
	if err := pool.Submit(Job[int, int]{ID: "late", Done: col.done}); !errors.Is(err, ErrPoolClosed) {
		t.Fatalf("submit after close: %v", err)
	}
}

func TestPoolCloseDeadline(t *testing.T) {
	e := newTestEngine(t)
	pool, err := NewPool(e, PoolConfig{Kind: "stuck", Size: 1, Log: testLogger(t)}, func(ctx context.Context, n int) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector[int]()
	for i := range 3 {
		_ = pool.Submit(Job[int, int]{ID: strconv.Itoa(i), Msg: i, Done: col.done})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := pool.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close: %v", err)
	}
	testsupport.WaitFor(t, time.Minute, "every job ended", func() bool { return col.len() == 3 })
	if r := col.get("0"); r.Err == nil {
		t.Fatal("running job reported success")
	}
	for _, id := range []string{"1", "2"} {
		if r := col.get(id); !errors.Is(r.Err, ErrPoolClosed) {
			t.Fatalf("queued job %s: %v", id, r.Err)
		}
	}
}

func TestPoolRefusesBadConfig(t *testing.T) {
	e := newTestEngine(t)
	work := func(context.Context, int) (int, error) { return 0, nil }
	if _, err := NewPool[int, int](nil, PoolConfig{Kind: "x", Size: 1}, work); err == nil {
		t.Error("nil engine accepted")
	}
	if _, err := NewPool(e, PoolConfig{Kind: "x", Size: 0}, work); err == nil {
		t.Error("size 0 accepted")
	}
	if _, err := NewPool[int, int](e, PoolConfig{Kind: "x", Size: 1}, nil); err == nil {
		t.Error("nil work accepted")
	}
	p, _ := NewPool(e, PoolConfig{Kind: "x", Size: 1}, work)
	if err := p.Submit(Job[int, int]{ID: "no-reply"}); err == nil {
		t.Error("job without a reply path accepted")
	}
	_ = p.Close(context.Background())
}
