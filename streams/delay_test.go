package streams

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow/internal/testsupport"
)

func TestDelayRelayWaitsUntilDue(t *testing.T) {
	t.Parallel()
	pub := &capturePublisher{ch: make(chan Message, 4)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := NewDelayRelay(ctx, pub, zerolog.Nop(), time.Now, "task")
	due := time.Now().Add(150 * time.Millisecond)
	m := Message{Topic: "docflow.retry.1s", Key: []byte("1"), Value: []byte("task"), Headers: []Header{
		{Key: HeaderDueAt, Value: []byte(fmt.Sprint(due.UnixMilli()))},
		{Key: HeaderTargetTopic, Value: []byte("docflow.steps.ocr")},
		{Key: HeaderReason, Value: []byte("flaky")},
	}}
	go func() {
		if !r.Forward(m, due.UnixMilli(), "docflow.steps.ocr") {
			t.Error("not forwarded")
		}
	}()
	select {
	case out := <-pub.ch:
		if time.Now().Before(time.UnixMilli(due.UnixMilli())) {
			t.Fatal("published before due")
		}
		if out.Topic != "docflow.steps.ocr" || string(out.Value) != "task" || HeaderValue(out, HeaderDueAt) != "" ||
			HeaderValue(out, HeaderReason) != "flaky" {
			t.Fatalf("republished %+v", out)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("never republished")
	}
	// A stopped relay leaves the task alone.
	cancel()
	if r.Forward(m, time.Now().Add(time.Hour).UnixMilli(), "docflow.steps.ocr") {
		t.Fatal("forwarded after stop")
	}
}

type capturePublisher struct{ ch chan Message }

func (c *capturePublisher) Publish(_ context.Context, msgs ...Message) error {
	for _, m := range msgs {
		c.ch <- m
	}
	return nil
}

// timedPublisher records each published message with the time it was
// published.
type timedPublisher struct {
	mu   sync.Mutex
	msgs []Message
	at   []time.Time
}

func (p *timedPublisher) Publish(_ context.Context, msgs ...Message) error {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		p.msgs = append(p.msgs, m)
		p.at = append(p.at, now)
	}
	return nil
}

func (p *timedPublisher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.msgs)
}

// A backlog of 100,000 delayed tasks, queued in shuffled order and due
// over four seconds, waits on the relay's one goroutine (the goroutine
// count does not grow with it), and every task is published no earlier
// than due, promptly, and in order of due time.
func TestDelayRelayHoldsABacklogOnOneGoroutine(t *testing.T) {
	const n = 100_000
	pub := &timedPublisher{}
	ctx, cancel := context.WithCancel(context.Background())
	// The relay's clock stands still while the backlog is queued (however
	// long a loaded machine takes), so none is due before all are queued.
	start := time.Now()
	var frozen atomic.Bool
	frozen.Store(true)
	clock := func() time.Time {
		if frozen.Load() {
			return start
		}
		return time.Now()
	}
	r := NewDelayRelay(ctx, pub, zerolog.Nop(), clock, "task")
	t.Cleanup(func() { cancel(); r.Wait() })
	before := runtime.NumGoroutine()

	base := start.Add(time.Second).UnixMilli()
	var forwardedCount atomic.Int64
	for i := range n {
		k := (i * 7919) % n // a permutation of 0..n-1: arrival is not due order
		due := base + int64(k)/25
		m := Message{Topic: "docflow.retry.1s", Key: []byte(strconv.Itoa(k)), Headers: []Header{
			{Key: HeaderDueAt, Value: []byte(strconv.FormatInt(due, 10))},
			{Key: HeaderTargetTopic, Value: []byte("docflow.steps.ocr")},
		}}
		r.add(due, forwarded(m, "docflow.steps.ocr"), ctx, func(o delayOutcome) {
			if o == delayForwarded {
				forwardedCount.Add(1)
			}
		})
	}
	queued := time.Now()
	frozen.Store(false)
	r.poke()
	t.Logf("queued %d tasks in %v", n, queued.Sub(start))
	if grown := runtime.NumGoroutine() - before; grown > 2 {
		t.Errorf("%d goroutines more with %d tasks waiting", grown, n)
	}
	testsupport.WaitFor(t, time.Minute, "every task published", func() bool { return forwardedCount.Load() == n })
	if grown := runtime.NumGoroutine() - before; grown > 2 {
		t.Errorf("%d goroutines more after the backlog", grown)
	}

	pub.mu.Lock()
	defer pub.mu.Unlock()
	if len(pub.msgs) != n {
		t.Fatalf("%d published, want %d", len(pub.msgs), n)
	}
	var prev int64
	var late time.Duration
	seen := make([]bool, n)
	for i, m := range pub.msgs {
		k, _ := strconv.Atoi(string(m.Key))
		due := base + int64(k)/25
		if seen[k] {
			t.Fatalf("task %d published twice", k)
		}
		seen[k] = true
		if due < prev {
			t.Fatalf("task %d (due %d) published after one due %d", k, due, prev)
		}
		prev = due
		if at := pub.at[i]; at.Before(time.UnixMilli(due)) {
			t.Fatalf("task %d published %v before due", k, time.UnixMilli(due).Sub(at))
		} else {
			late = max(late, at.Sub(later(time.UnixMilli(due), queued)))
		}
		if HeaderValue(m, HeaderDueAt) != "" || m.Topic != "docflow.steps.ocr" {
			t.Fatalf("republished %+v", m)
		}
	}
	t.Logf("%d tasks over %v: at most %v late", n, time.Duration(n/25)*time.Millisecond, late)
	// NOTE: the bound is what one goroutine needs to pop and publish the
	// backlog on a loaded 2-core machine; the race detector multiplies it.
	// On a machine so busy that queueing the backlog took long, the bound
	// grows with it: popping and publishing cost about five times
	// queueing, so ten times leaves room for that and a relay that does
	// more per task (one that scans its backlog at each pop, say) still
	// misses it.
	bound := time.Second
	if raceBuild {
		bound = 6 * time.Second
	}
	bound = max(bound, 10*queued.Sub(start))
	if late > bound {
		t.Errorf("a task was published %v after due", late)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// A revoked partition's waiting tasks are released at once, unpublished,
// for its next owner; the others wait on. A stopped relay publishes
// nothing more.
func TestDelayRelayReleasesRevokedPartitions(t *testing.T) {
	t.Parallel()
	pub := &timedPublisher{}
	ctx, cancel := context.WithCancel(context.Background())
	r := NewDelayRelay(ctx, pub, zerolog.Nop(), time.Now, "task")
	owned, revoke := context.WithCancel(context.Background())
	var released, kept, stopped atomic.Int32
	due := time.Now().Add(time.Hour).UnixMilli()
	for i := range 100 {
		o, count := owned, &released
		if i%2 == 1 {
			o, count = context.Background(), &kept
		}
		r.add(due, Message{Topic: "t"}, o, func(out delayOutcome) {
			switch out {
			case delayRevoked:
				count.Add(1)
			case delayStopped:
				stopped.Add(1)
			}
		})
	}
	revoke()
	testsupport.WaitFor(t, time.Minute, "the revoked partition's tasks released", func() bool { return released.Load() == 50 })
	cancel()
	r.Wait()
	if kept.Load() != 0 || stopped.Load() != 50 || pub.count() != 0 {
		t.Errorf("kept %d released, %d stopped, %d published; want 0, 50, 0", kept.Load(), stopped.Load(), pub.count())
	}
}
