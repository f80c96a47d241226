package analytics

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"docflow"

	"docflow/internal/testsupport"
)

// fakeStore records the batches written to it; fail makes writes fail and
// hold makes them block until released or their context ends.
type fakeStore struct {
	mu      sync.Mutex
	batches [][]int
	fail    bool
	hold    chan struct{}
}

func (f *fakeStore) write(ctx context.Context, rows []int) error {
	f.mu.Lock()
	hold, fail := f.hold, f.fail
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fail {
		return errors.New("store down")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, append([]int(nil), rows...))
	return nil
}

func (f *fakeStore) setFail(v bool) {
	f.mu.Lock()
	f.fail = v
	f.mu.Unlock()
}

func (f *fakeStore) rows() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []int
	for _, b := range f.batches {
		all = append(all, b...)
	}
	return all
}

func (f *fakeStore) batchSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n []int
	for _, b := range f.batches {
		n = append(n, len(b))
	}
	return n
}

func checkOrdered(t *testing.T, got []int, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("wrote %d rows, want %d", len(got), n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("row %d is %d: rows lost, duplicated or reordered", i, v)
		}
	}
}

func TestBatcherFlushAtSize(t *testing.T) {
	f := &fakeStore{}
	b := NewBatcher(f.write, Options{BatchSize: 100, QueueSize: 1000, FlushInterval: time.Hour})
	defer b.Close()
	for i := range 250 {
		b.Add(i)
	}
	testsupport.WaitFor(t, time.Minute, "two full batches", func() bool { return b.Stats().Written == 200 })
	time.Sleep(50 * time.Millisecond)
	if s := b.Stats(); s.Written != 200 || s.Buffered != 50 {
		t.Fatalf("stats %+v, want 200 written and 50 buffered until the interval", s)
	}
	for _, n := range f.batchSizes() {
		if n > 100 {
			t.Fatalf("batch of %d rows exceeds BatchSize 100", n)
		}
	}
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkOrdered(t, f.rows(), 250)
}

func TestBatcherFlushAtInterval(t *testing.T) {
	f := &fakeStore{}
	b := NewBatcher(f.write, Options{BatchSize: 1000, FlushInterval: 50 * time.Millisecond})
	defer b.Close()
	for i := range 3 {
		b.Add(i)
	}
	testsupport.WaitFor(t, time.Minute, "the interval flush", func() bool { return len(f.rows()) == 3 })
	checkOrdered(t, f.rows(), 3)
}

func TestBatcherCloseFlushes(t *testing.T) {
	f := &fakeStore{}
	b := NewBatcher(f.write, Options{BatchSize: 1000, FlushInterval: time.Hour})
	for i := range 500 {
		b.Add(i)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	checkOrdered(t, f.rows(), 500)
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if b.Add(1) {
		t.Fatal("Add after Close queued a row")
	}
	if err := b.Flush(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close = %v, want ErrClosed", err)
	}
	if s := b.Stats(); s.Recorded != 501 || s.Written != 500 || s.Dropped != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestBatcherOverflowNeverBlocks(t *testing.T) {
	f := &fakeStore{hold: make(chan struct{})}
	b := NewBatcher(f.write, Options{BatchSize: 10, QueueSize: 20, MaxBuffered: 30,
		FlushInterval: time.Millisecond, WriteTimeout: time.Minute})
	const n = 100_000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			b.Add(i)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Add blocked while the store hung")
	}
	s := b.Stats()
	if s.Dropped == 0 || s.Buffered > 20+30 {
		t.Fatalf("stats %+v: want drops and at most 50 rows buffered", s)
	}
	close(f.hold)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	s = b.Stats()
	if s.Recorded != n || s.Written+s.Dropped != n || int64(len(f.rows())) != s.Written {
		t.Fatalf("stats %+v, store has %d rows: counters do not add up", s, len(f.rows()))
	}
}

func TestBatcherRetriesWithoutLoss(t *testing.T) {
	f := &fakeStore{fail: true}
	b := NewBatcher(f.write, Options{BatchSize: 100, FlushInterval: 10 * time.Millisecond,
		MaxBuffered: 1000, QueueSize: 1000, RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond})
	defer b.Close()
	for i := range 800 {
		b.Add(i)
	}
	if err := b.Flush(context.Background()); err == nil {
		t.Fatal("Flush succeeded while the store is down")
	}
	testsupport.WaitFor(t, time.Minute, "a few retries", func() bool { return b.Stats().WriteErrors >= 3 })
	if s := b.Stats(); s.Written != 0 || s.Dropped != 0 || s.Buffered != 800 {
		t.Fatalf("stats during outage %+v", s)
	}
	f.setFail(false)
	testsupport.WaitFor(t, time.Minute, "the backlog written by the background retry", func() bool { return b.Stats().Written == 800 })
	checkOrdered(t, f.rows(), 800)
}

func TestBatcherOutageIsBounded(t *testing.T) {
	f := &fakeStore{fail: true}
	b := NewBatcher(f.write, Options{BatchSize: 50, FlushInterval: 10 * time.Millisecond,
		MaxBuffered: 200, QueueSize: 100, RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond})
	defer b.Close()
	for i := range 1000 {
		b.Add(i)
		if i%50 == 49 { // let the loop take what it may before going on
			testsupport.WaitFor(t, time.Minute, "the loop to catch up", func() bool {
				q := b.queuedRows()
				return q == 0 || b.Stats().Buffered-int64(q) >= 200
			})
		}
	}
	testsupport.WaitFor(t, time.Minute, "the buffer at its bound", func() bool { return b.Stats().Buffered == 300 })
	if s := b.Stats(); s.Dropped != 700 {
		t.Fatalf("stats %+v: want 700 dropped with 300 buffered", s)
	}
	f.setFail(false)
	testsupport.WaitFor(t, time.Minute, "the backlog written", func() bool { return b.Stats().Written == 300 })
	checkOrdered(t, f.rows(), 300)
}

func TestBatcherCloseGivesUpAfterTimeout(t *testing.T) {
	f := &fakeStore{fail: true}
	b := NewBatcher(f.write, Options{BatchSize: 10, RetryMin: time.Millisecond,
		RetryMax: 5 * time.Millisecond, CloseTimeout: 100 * time.Millisecond})
	for i := range 25 {
		b.Add(i)
	}
	start := time.Now()
	if err := b.Close(); err == nil {
		t.Fatal("Close reported success with the store down")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v with CloseTimeout 100ms", d)
	}
	if s := b.Stats(); s.Dropped != 25 || s.Buffered != 0 {
		t.Fatalf("stats %+v: want the 25 unwritten rows counted as dropped", s)
	}
}

func TestBatcherFlushHonoursContext(t *testing.T) {
	f := &fakeStore{hold: make(chan struct{})}
	b := NewBatcher(f.write, Options{FlushInterval: time.Hour})
	defer func() { close(f.hold); b.Close() }()
	b.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := b.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush = %v, want deadline exceeded", err)
	}
}

func TestBackoff(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: 100, 2: 200, 3: 400, 10: 1000} {
		b := retryBackoff(100, 1000)
		b.Reset()
		var got time.Duration
		for range attempt {
			got = b.NextBackOff()
		}
		if got < want*8/10 || got > want*12/10 {
			t.Errorf("backoff(attempt %d) = %v, want %v ±20%%", attempt, got, want)
		}
	}
}

func TestBatcherRejectsOnlyBadRows(t *testing.T) {
	var mu sync.Mutex
	var stored []int
	write := func(_ context.Context, rows []int) error {
		for _, r := range rows {
			if r%100 == 7 {
				return Permanent(errors.New("value out of range"))
			}
		}
		mu.Lock()
		stored = append(stored, rows...)
		mu.Unlock()
		return nil
	}
	b := NewBatcher(write, Options{BatchSize: 256, QueueSize: 1000, FlushInterval: time.Hour})
	for i := range 1000 {
		b.Add(i)
	}
	if err := b.Flush(context.Background()); err != nil {
		t.Fatalf("Flush with permanently bad rows: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	s := b.Stats()
	if s.Rejected != 10 || s.Written != 990 || s.Dropped != 0 || int64(len(stored)) != s.Written {
		t.Fatalf("stats %+v, stored %d: want exactly the 10 bad rows rejected", s, len(stored))
	}
	for i, v := range stored {
		if v%100 == 7 || (i > 0 && v <= stored[i-1]) {
			t.Fatalf("stored rows out of order or include a bad one at %d: %d", i, v)
		}
	}
}

func TestBatcherCloseCancelsHungWrite(t *testing.T) {
	f := &fakeStore{hold: make(chan struct{})}
	b := NewBatcher(f.write, Options{BatchSize: 10, FlushInterval: time.Hour, WriteTimeout: time.Hour,
		CloseTimeout: 200 * time.Millisecond, RetryMin: 10 * time.Millisecond})
	for i := range 10 { // a full batch: the loop starts a write that hangs
		b.Add(i)
	}
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	err := b.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v behind a hung write (CloseTimeout 200ms)", d)
	}
	if err == nil {
		t.Fatal("Close reported success with the write hung")
	}
	if s := b.Stats(); s.Dropped != 10 {
		t.Fatalf("stats %+v: want the 10 unwritten rows counted as dropped", s)
	}
	close(f.hold)
}

func TestBoundedOptions(t *testing.T) {
	for _, total := range []int{1000, 100_000, 1_000_000} {
		o := Options{}.Bounded(total).withDefaults()
		if o.QueueSize+o.MaxBuffered != total || o.BatchSize > o.MaxBuffered || o.BatchSize > DefaultBatchSize || 2*o.BatchSize > o.QueueSize {
			t.Errorf("Bounded(%d) = queue %d + buffer %d, batch %d", total, o.QueueSize, o.MaxBuffered, o.BatchSize)
		}
	}
}

// A batch whose write failed as a whole is retried as exactly the same
// rows under the same token, even when more rows arrived meanwhile.
func TestBatcherRetriesTheSameBatch(t *testing.T) {
	type call struct {
		token   string
		attempt int
		rows    []int
	}
	var (
		mu    sync.Mutex
		calls []call
	)
	write := func(ctx context.Context, rows []int) error {
		tok, attempt, ok := BatchToken(ctx)
		if !ok {
			t.Error("no batch token")
		}
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, call{tok, attempt, append([]int(nil), rows...)})
		if len(calls) == 1 {
			return errors.New("answer lost")
		}
		return nil
	}
	b := NewBatcher(write, Options{FlushInterval: time.Hour, BatchSize: 10, RetryMin: 50 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	defer b.Close()
	for i := range 5 {
		b.Add(i)
	}
	if err := b.Flush(context.Background()); err == nil {
		t.Fatal("flush succeeded")
	}
	for i := 5; i < 8; i++ {
		b.Add(i)
	}
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) < 3 {
		t.Fatalf("calls %+v", calls)
	}
	first, retry, next := calls[0], calls[1], calls[2]
	if retry.token != first.token || retry.attempt != 2 || !slices.Equal(retry.rows, first.rows) || len(first.rows) != 5 {
		t.Fatalf("retry %+v of %+v", retry, first)
	}
	if next.token == first.token || next.attempt != 1 || !slices.Equal(next.rows, []int{5, 6, 7}) {
		t.Fatalf("next batch %+v", next)
	}
}

// With Writers > 1 several writes run at once, and every row is written
// exactly once.
func TestBatcherConcurrentWriters(t *testing.T) {
	var (
		mu        sync.Mutex
		stored    []int
		running   int
		maxActive int
	)
	write := func(_ context.Context, rows []int) error {
		mu.Lock()
		running++
		maxActive = max(maxActive, running)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		running--
		stored = append(stored, rows...)
		mu.Unlock()
		return nil
	}
	b := NewBatcher(write, Options{BatchSize: 100, QueueSize: 10_000, MaxBuffered: 10_000, Writers: 2, FlushInterval: time.Hour})
	for i := range 2000 {
		b.Add(i)
	}
	testsupport.WaitFor(t, time.Minute, "the full batches written", func() bool { return b.Stats().Written == 2000 })
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(stored)
	checkOrdered(t, stored, 2000)
	if maxActive != 2 {
		t.Fatalf("at most %d writes ran at once, want 2", maxActive)
	}
}

// TestBatcherSteadyFlowReusesItsBuffer: a flow that varies by a tenth from
// one flush to the next fills a recycled buffer without growing it, so
// once the flow is known every batch arrives in the same memory (growing a
// large buffer allocates, zeroes and copies, which was most of what Add
// cost in the pipeline).
func TestBatcherSteadyFlowReusesItsBuffer(t *testing.T) {
	var arrays []*int
	b := NewBatcher(func(_ context.Context, rows []int) error {
		arrays = append(arrays, unsafe.SliceData(rows)) // one write at a time: Flush waits
		return nil
	}, Options{BatchSize: 100_000, FlushInterval: time.Hour})
	defer b.Close()
	flows := []int{3000, 3300, 2900, 3200, 3100}
	for round := range 15 {
		for i := range flows[round%len(flows)] {
			b.Add(i)
		}
		if err := b.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for round := 3; round < len(arrays); round++ {
		if arrays[round] != arrays[2] {
			t.Fatalf("round %d's batch is in new memory: the buffer was grown or replaced under a steady flow", round)
		}
	}
}

// TestBatcherDropsABufferFromABurst: after a burst, the flow falls back to
// buffers of its own size rather than keeping the burst's.
func TestBatcherDropsABufferFromABurst(t *testing.T) {
	var mu sync.Mutex
	var caps []int
	b := NewBatcher(func(_ context.Context, rows []int) error {
		mu.Lock()
		caps = append(caps, cap(rows))
		mu.Unlock()
		return nil
	}, Options{BatchSize: 100_000, FlushInterval: time.Hour})
	defer b.Close()
	for _, n := range []int{50_000, 50_000, 2000, 2000, 2000} {
		for i := range n {
			b.Add(i)
		}
		if err := b.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if last := caps[len(caps)-1]; last > 2*2500 {
		t.Fatalf("capacities %v: the last batch of 2000 rows still sits in a buffer of %d", caps, last)
	}
}

// BenchmarkBatcherFirstBatch is a fresh batcher's first batch of 16,000
// metrics, grown from firstCap, as a new worker's first flush interval.
func BenchmarkBatcherFirstBatch(b *testing.B) {
	m := docflow.Metric{Kind: docflow.MetricStep, Time: time.Now(), StepType: "test", Status: "succeeded", RunID: "r", Pipeline: "1", Worker: "w"}
	for b.Loop() {
		bt := NewBatcher(func(context.Context, []docflow.Metric) error { return nil }, Options{BatchSize: 50_000, FlushInterval: time.Hour})
		for range 16_000 {
			bt.Add(m)
		}
		bt.Close()
	}
}

// TestBatcherGrowsByDoubling: a fresh batcher's buffer doubles from
// firstCap rather than growing by append's quarter (each growth a copy
// into fresh memory), and never past BatchSize.
func TestBatcherGrowsByDoubling(t *testing.T) {
	b := NewBatcher(func(context.Context, []int) error { return nil }, Options{BatchSize: 40_000, FlushInterval: time.Hour})
	defer b.Close()
	capAfter := func(n int) int {
		for i := range n {
			b.Add(i)
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		return cap(b.cur)
	}
	if got := capAfter(16_000); got != 16*firstCap {
		t.Fatalf("capacity %d after 16,000 rows, want %d (doubled from %d)", got, 16*firstCap, firstCap)
	}
	if got := capAfter(39_999 - 16_000); got != 40_000 {
		t.Fatalf("capacity %d with 39,999 rows, want BatchSize 40,000", got)
	}
}
