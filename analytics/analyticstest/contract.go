// Package analyticstest holds the contract suite every metrics recorder
// passes, and a TCP proxy to cut a recorder off from its store.
package analyticstest

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/analytics"
)

// Recorder is a docflow.Recorder with the analytics counters.
type Recorder interface {
	docflow.Recorder
	Stats() analytics.Stats
}

// Reader reads back what a recorder wrote: counts over the raw rows of a
// window [from, to), sorted by their key fields. Metrics still buffered
// in the recorder are not visible. Each store's tests implement it over
// the store, as plainly as they can.
type Reader interface {
	StepStats(ctx context.Context, from, to time.Time) ([]StepStat, error)
	RequestStats(ctx context.Context, from, to time.Time) ([]RequestStat, error)
	IntakeStats(ctx context.Context, from, to time.Time) ([]IntakeStat, error)
}

// StepStat summarises step attempts of one step type.
type StepStat struct {
	StepType    string
	Count       int64 // attempts
	Failed      int64 // attempts with status failed
	AvgDuration time.Duration
}

// RequestStat counts HTTP requests of one method, route pattern and status.
type RequestStat struct {
	Method      string
	Route       string
	HTTPStatus  int
	Count       int64
	AvgDuration time.Duration
}

// IntakeStat counts documents taken in through one channel.
type IntakeStat struct {
	Channel string
	Count   int64
	Bytes   int64
}

// Subject is one recorder under test over a fresh, empty store.
type Subject struct {
	Recorder Recorder
	// Reader reads back what Recorder wrote (RunContract).
	Reader Reader
	// Reports answers from what Recorder wrote (RunReports).
	Reports docflow.Analytics
	// Proxy carries the recorder's connections (not those of Reader); the
	// outage cases are skipped when it is nil.
	Proxy *Proxy
	// IdempotentRetry says the store recognises a retried batch that had
	// landed (analytics.BatchToken); LostAnswerWrittenOnce is skipped
	// without it.
	IdempotentRetry bool
}

// NewSubject builds a Subject with the given options and registers its
// cleanup with t. The suite may Close the recorder itself.
type NewSubject func(t *testing.T, opts analytics.Options) Subject

// RunContract runs the recorder contract against the implementation newSubject
// builds.
func RunContract(t *testing.T, newSubject NewSubject) {
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, newSubject) })
	t.Run("FlushAtSize", func(t *testing.T) { testFlushAtSize(t, newSubject) })
	t.Run("FlushAtInterval", func(t *testing.T) { testFlushAtInterval(t, newSubject) })
	t.Run("CloseFlushes", func(t *testing.T) { testCloseFlushes(t, newSubject) })
	t.Run("OverflowNeverBlocks", func(t *testing.T) { testOverflowNeverBlocks(t, newSubject) })
	t.Run("OutageRecovers", func(t *testing.T) { testOutageRecovers(t, newSubject) })
	t.Run("OutageIsBounded", func(t *testing.T) { testOutageIsBounded(t, newSubject) })
	t.Run("LostAnswerWrittenOnce", func(t *testing.T) { testLostAnswerWrittenOnce(t, newSubject) })
	t.Run("Ping", func(t *testing.T) { testPing(t, newSubject) })
}

// quiet is a base for options: nothing flushes by itself.
func quiet() analytics.Options {
	return analytics.Options{
		FlushInterval: time.Hour,
		BatchSize:     10_000,
		QueueSize:     20_000,
		RetryMin:      20 * time.Millisecond,
		RetryMax:      200 * time.Millisecond,
		WriteTimeout:  2 * time.Second,
		CloseTimeout:  10 * time.Second,
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// base is a whole second (ClickHouse's DateTime resolution) two hours ago:
// inside the window of stepCount, and an hour clear of metrics stamped now.
func base() time.Time { return time.Now().UTC().Truncate(time.Second).Add(-2 * time.Hour) }

func step(ts time.Time, i int) docflow.Metric {
	return docflow.Metric{Kind: docflow.MetricStep, Time: ts, FileID: int64(i), RunID: fmt.Sprintf("run-%d", i),
		StepType: "ocr", Status: "completed", Attempt: 1, Duration: 10 * time.Millisecond}
}

// stepCount is the number of step rows the store holds around now.
func stepCount(t *testing.T, q Reader) int64 {
	t.Helper()
	now := time.Now()
	stats, err := q.StepStats(ctxT(t), now.Add(-24*time.Hour), now.Add(24*time.Hour))
	if err != nil {
		t.Fatalf("StepStats: %v", err)
	}
	var n int64
	for _, s := range stats {
		n += s.Count
	}
	return n
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkBalanced asserts that, with nothing buffered, every recorded row was
// either written or dropped, and that the store holds exactly the written ones.
func checkBalanced(t *testing.T, s Subject) {
	t.Helper()
	// The counters settle a moment after the write that moved them.
	var st analytics.Stats
	deadline := time.Now().Add(5 * time.Second)
	for {
		st = s.Recorder.Stats()
		if st.Buffered == 0 && st.Rejected == 0 && st.Recorded == st.Written+st.Dropped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: recorded != written + dropped with nothing buffered", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := stepCount(t, s.Reader); got != st.Written {
		t.Fatalf("store holds %d rows, recorder wrote %d: rows lost or duplicated", got, st.Written)
	}
}

func testRoundTrip(t *testing.T, newSubject NewSubject) {
	s := newSubject(t, quiet())
	b := base()
	ms := time.Millisecond
	in := []docflow.Metric{
		{Kind: docflow.MetricStep, Time: b, FileID: 1, RunID: "r1", StepType: "ocr", Status: "completed", Attempt: 1, Duration: 100 * ms},
		{Kind: docflow.MetricStep, Time: b.Add(time.Second), FileID: 1, RunID: "r1", StepType: "ocr", Status: "failed", Attempt: 2, Duration: 300 * ms, ErrorClass: "timeout"},
		{Kind: docflow.MetricStep, Time: b.Add(2 * time.Second), FileID: 2, RunID: "r2", StepType: "convert_to_pdf", Status: "completed", Attempt: 1, Duration: 1500 * ms},
		{Kind: docflow.MetricStep, Time: b.Add(3 * time.Second), FileID: 3, RunID: "r3", StepType: "classify", Status: "skipped", Attempt: 1, Duration: 250 * time.Microsecond},
		{Kind: docflow.MetricIntake, Time: b, FileID: 1, Channel: "upload", Bytes: 1000, OwnerID: "u1"},
		{Kind: docflow.MetricIntake, Time: b.Add(time.Second), FileID: 2, Channel: "upload", Bytes: 500, OwnerID: "u1"},
		{Kind: docflow.MetricIntake, Time: b.Add(time.Second), FileID: 3, Channel: "imap", Bytes: 42, OwnerID: "u2"},
		{Kind: docflow.MetricRequest, Time: b, Method: "GET", Route: "/api/files", Status: "200", HTTPStatus: 200, Duration: 4 * ms},
		{Kind: docflow.MetricRequest, Time: b.Add(time.Second), Method: "GET", Route: "/api/files", Status: "200", HTTPStatus: 200, Duration: 6 * ms},
		{Kind: docflow.MetricRequest, Time: b, Method: "POST", Route: "/api/files", Status: "413", HTTPStatus: 413, Duration: 1 * ms},
		{Kind: docflow.MetricRequest, Time: b, Method: "GET", Route: "/api/files/{id}", Status: "404", HTTPStatus: 404, Duration: 2 * ms},
		// Outside the window [b, b+1h): just before and exactly at its end.
		{Kind: docflow.MetricStep, Time: b.Add(-time.Second), StepType: "ocr", Status: "failed", Duration: time.Hour},
		{Kind: docflow.MetricIntake, Time: b.Add(time.Hour), Channel: "upload", Bytes: 1 << 40},
		{Kind: docflow.MetricRequest, Time: b.Add(time.Hour), Method: "GET", Route: "/api/files", HTTPStatus: 500},
	}
	for _, m := range in {
		s.Recorder.Record(m)
	}
	// A metric without a time is stamped when recorded.
	s.Recorder.Record(docflow.Metric{Kind: docflow.MetricStep, StepType: "embed_metadata", Status: "completed", Duration: ms})
	if err := s.Recorder.Flush(ctxT(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if st := s.Recorder.Stats(); st.Recorded != int64(len(in)+1) || st.Written != st.Recorded || st.Dropped != 0 || st.Buffered != 0 {
		t.Fatalf("stats after Flush: %+v", st)
	}

	from, to := b, b.Add(time.Hour)
	steps, err := s.Reader.StepStats(ctxT(t), from, to)
	if err != nil {
		t.Fatalf("StepStats: %v", err)
	}
	wantSteps := []StepStat{
		{StepType: "classify", Count: 1, AvgDuration: 250 * time.Microsecond},
		{StepType: "convert_to_pdf", Count: 1, AvgDuration: 1500 * ms},
		{StepType: "ocr", Count: 2, Failed: 1, AvgDuration: 200 * ms},
	}
	if !reflect.DeepEqual(steps, wantSteps) {
		t.Errorf("StepStats\n got %+v\nwant %+v", steps, wantSteps)
	}
	reqs, err := s.Reader.RequestStats(ctxT(t), from, to)
	if err != nil {
		t.Fatalf("RequestStats: %v", err)
	}
	wantReqs := []RequestStat{
		{Method: "GET", Route: "/api/files", HTTPStatus: 200, Count: 2, AvgDuration: 5 * ms},
		{Method: "POST", Route: "/api/files", HTTPStatus: 413, Count: 1, AvgDuration: ms},
		{Method: "GET", Route: "/api/files/{id}", HTTPStatus: 404, Count: 1, AvgDuration: 2 * ms},
	}
	if !reflect.DeepEqual(reqs, wantReqs) {
		t.Errorf("RequestStats\n got %+v\nwant %+v", reqs, wantReqs)
	}
	intake, err := s.Reader.IntakeStats(ctxT(t), from, to)
	if err != nil {
		t.Fatalf("IntakeStats: %v", err)
	}
	wantIntake := []IntakeStat{{Channel: "imap", Count: 1, Bytes: 42}, {Channel: "upload", Count: 2, Bytes: 1500}}
	if !reflect.DeepEqual(intake, wantIntake) {
		t.Errorf("IntakeStats\n got %+v\nwant %+v", intake, wantIntake)
	}

	now := time.Now()
	recent, err := s.Reader.StepStats(ctxT(t), now.Add(-time.Minute), now.Add(time.Minute))
	if err != nil {
		t.Fatalf("StepStats: %v", err)
	}
	if want := []StepStat{{StepType: "embed_metadata", Count: 1, AvgDuration: ms}}; !reflect.DeepEqual(recent, want) {
		t.Errorf("StepStats around now (the metric stamped by Record)\n got %+v\nwant %+v", recent, want)
	}

	empty, err := s.Reader.StepStats(ctxT(t), b.Add(-48*time.Hour), b.Add(-47*time.Hour))
	if err != nil || len(empty) != 0 {
		t.Errorf("StepStats over an empty window = %+v, %v; want none", empty, err)
	}
}

func testFlushAtSize(t *testing.T, newSubject NewSubject) {
	opts := quiet()
	opts.BatchSize = 100
	s := newSubject(t, opts)
	b := base()
	for i := range 250 {
		s.Recorder.Record(step(b, i))
	}
	eventually(t, 10*time.Second, "two full batches written, 50 rows left buffered", func() bool {
		st := s.Recorder.Stats()
		return st.Written >= 200 && st.Buffered == 50
	})
	if got := stepCount(t, s.Reader); got != 200 {
		t.Fatalf("store holds %d rows after two batches of 100, want 200 (the rest waits for the interval)", got)
	}
	if st := s.Recorder.Stats(); st.Written != 200 {
		t.Fatalf("stats %+v: want 200 written", st)
	}
	if err := s.Recorder.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	checkBalanced(t, s)
	if st := s.Recorder.Stats(); st.Written != 250 {
		t.Fatalf("stats after Close %+v, want 250 written", st)
	}
}

func testFlushAtInterval(t *testing.T, newSubject NewSubject) {
	opts := quiet()
	opts.FlushInterval = 200 * time.Millisecond
	s := newSubject(t, opts)
	b := base()
	for i := range 5 {
		s.Recorder.Record(step(b, i))
	}
	eventually(t, 10*time.Second, "the interval flush", func() bool { return stepCount(t, s.Reader) == 5 })
	// The store shows the rows a moment before the write call returns.
	eventually(t, 5*time.Second, "the write counted", func() bool { return s.Recorder.Stats().Written == 5 })
	if st := s.Recorder.Stats(); st.Buffered != 0 {
		t.Fatalf("stats %+v, want nothing buffered", st)
	}
}

func testCloseFlushes(t *testing.T, newSubject NewSubject) {
	s := newSubject(t, quiet())
	b := base()
	for i := range 300 {
		s.Recorder.Record(step(b, i))
	}
	if got := stepCount(t, s.Reader); got != 0 {
		t.Fatalf("store holds %d rows before any flush, want 0", got)
	}
	if err := s.Recorder.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := stepCount(t, s.Reader); got != 300 {
		t.Fatalf("store holds %d rows after Close, want 300", got)
	}
	s.Recorder.Record(step(b, 300)) // must neither panic nor block
	if err := s.Recorder.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if st := s.Recorder.Stats(); st.Recorded != 301 || st.Written != 300 || st.Dropped != 1 {
		t.Fatalf("stats %+v: want the row recorded after Close dropped", st)
	}
}

// recordConcurrently records n step rows from 4 goroutines and fails the test
// if that takes longer than a generous bound: Record must not wait for I/O.
func recordConcurrently(t *testing.T, r Recorder, n int) {
	t.Helper()
	b := base()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 4 {
				r.Record(step(b, i))
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("recording %d rows took over 10 s with the store unreachable: Record blocks", n)
	}
}

func testOverflowNeverBlocks(t *testing.T, newSubject NewSubject) {
	opts := quiet()
	opts.BatchSize, opts.QueueSize, opts.MaxBuffered = 50, 50, 100
	opts.FlushInterval = 20 * time.Millisecond
	opts.WriteTimeout = time.Second
	s := newSubject(t, opts)
	if s.Proxy == nil {
		t.Skip("no proxy: cannot make the store hang")
	}
	s.Proxy.Stall()
	recordConcurrently(t, s.Recorder, 20_000)
	st := s.Recorder.Stats()
	if st.Dropped == 0 {
		t.Fatalf("stats %+v: 20000 rows into a 150-row bound dropped none", st)
	}
	if st.Buffered > 150 {
		t.Fatalf("stats %+v: buffered beyond QueueSize+MaxBuffered (150)", st)
	}
	s.Proxy.Restore()
	if err := s.Recorder.Close(); err != nil {
		t.Fatalf("Close after the store came back: %v", err)
	}
	checkBalanced(t, s)
	if st := s.Recorder.Stats(); st.Written == 0 {
		t.Fatalf("stats %+v: nothing written after recovery", st)
	}
}

// retryOptions are those of the cases that cut the store off and watch
// the background retry: batches of 100, room for 2,000 rows, a write
// given up after a second.
func retryOptions() analytics.Options {
	opts := quiet()
	opts.BatchSize, opts.MaxBuffered, opts.QueueSize = 100, 1000, 1000
	opts.FlushInterval = 50 * time.Millisecond
	opts.WriteTimeout = time.Second
	return opts
}

// flushed flushes s until a flush succeeds: a loaded machine may time a
// write out, and the rows then stay buffered for the next.
func flushed(t *testing.T, s Subject, what string) {
	t.Helper()
	eventually(t, 15*time.Second, what, func() bool { return s.Recorder.Flush(ctxT(t)) == nil })
}

func testOutageRecovers(t *testing.T, newSubject NewSubject) {
	s := newSubject(t, retryOptions())
	if s.Proxy == nil {
		t.Skip("no proxy: cannot cut the store off")
	}
	b := base()
	for i := range 200 {
		s.Recorder.Record(step(b, i))
	}
	flushed(t, s, "the rows before the outage")
	s.Proxy.Break()
	for i := 200; i < 700; i++ {
		s.Recorder.Record(step(b, i))
	}
	if err := s.Recorder.Flush(ctxT(t)); err == nil {
		t.Fatal("Flush reported success with the store unreachable")
	}
	eventually(t, 10*time.Second, "background retries", func() bool { return s.Recorder.Stats().WriteErrors >= 3 })
	if st := s.Recorder.Stats(); st.Written != 200 || st.Dropped != 0 || st.Buffered != 500 {
		t.Fatalf("stats during the outage %+v: want 200 written, 500 buffered", st)
	}
	s.Proxy.Restore()
	// No Flush: the background retry must write the backlog by itself.
	eventually(t, 15*time.Second, "the backlog written after recovery", func() bool { return s.Recorder.Stats().Written == 700 })
	checkBalanced(t, s)
	if got := stepCount(t, s.Reader); got != 700 {
		t.Fatalf("store holds %d rows, want 700", got)
	}
}

// testLostAnswerWrittenOnce loses the store's answer to a write that
// landed: the client times out and retries the batch, which must not be
// stored twice.
func testLostAnswerWrittenOnce(t *testing.T, newSubject NewSubject) {
	// The write must land before the client gives up on it: a timeout
	// cancels the statement on the server (pgx sends a cancel request),
	// and a loaded machine's server can take over a second to commit.
	opts := retryOptions()
	opts.WriteTimeout = 4 * time.Second
	s := newSubject(t, opts)
	if s.Proxy == nil {
		t.Skip("no proxy: cannot lose an answer")
	}
	if !s.IdempotentRetry {
		t.Skip("the store does not recognise a retried batch")
	}
	b := base()
	for i := range 200 {
		s.Recorder.Record(step(b, i))
	}
	flushed(t, s, "the rows before")
	errs := s.Recorder.Stats().WriteErrors
	s.Proxy.Deafen()
	for i := 200; i < 300; i++ {
		s.Recorder.Record(step(b, i))
	}
	eventually(t, 30*time.Second, "the batch stored while its answer is held", func() bool { return stepCount(t, s.Reader) == 300 })
	eventually(t, 15*time.Second, "the write timing out", func() bool { return s.Recorder.Stats().WriteErrors > errs })
	// More rows meanwhile: the retry must still be the same batch.
	for i := 300; i < 350; i++ {
		s.Recorder.Record(step(b, i))
	}
	s.Proxy.Restore()
	eventually(t, 15*time.Second, "the backlog written after recovery", func() bool { return s.Recorder.Stats().Written == 350 })
	checkBalanced(t, s)
	if got := stepCount(t, s.Reader); got != 350 {
		t.Fatalf("store holds %d rows, want 350", got)
	}
}

func testOutageIsBounded(t *testing.T, newSubject NewSubject) {
	opts := quiet()
	opts.BatchSize, opts.MaxBuffered, opts.QueueSize = 50, 200, 100
	opts.FlushInterval = 20 * time.Millisecond
	opts.WriteTimeout = time.Second
	s := newSubject(t, opts)
	if s.Proxy == nil {
		t.Skip("no proxy: cannot cut the store off")
	}
	s.Proxy.Break()
	b := base()
	for i := range 2000 {
		s.Recorder.Record(step(b, i))
		if i%50 == 49 {
			time.Sleep(time.Millisecond)
		}
	}
	st := s.Recorder.Stats()
	if st.Buffered > 300 || st.Dropped < 1700 || st.Written != 0 {
		t.Fatalf("stats during the outage %+v: want at most 300 (MaxBuffered+QueueSize) buffered, the rest dropped", st)
	}
	kept := st.Recorded - st.Dropped // final: nothing drops once recording stops
	s.Proxy.Restore()
	eventually(t, 15*time.Second, "the buffered rows written after recovery", func() bool { return s.Recorder.Stats().Written == kept })
	checkBalanced(t, s)
}

func testPing(t *testing.T, newSubject NewSubject) {
	s := newSubject(t, quiet())
	if err := s.Recorder.Ping(ctxT(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if s.Proxy == nil {
		return
	}
	s.Proxy.Break()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := s.Recorder.Ping(ctx); err == nil {
		t.Fatal("Ping succeeded with the store unreachable")
	}
	s.Proxy.Restore()
	eventually(t, 10*time.Second, "Ping to succeed after recovery", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return s.Recorder.Ping(ctx) == nil
	})
}
