package pipeline

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/actors/pipeline/steps/teststep"
)

func TestRetryPolicyTiersAndJitter(t *testing.T) {
	t.Parallel()
	p := NewRetryPolicy([]time.Duration{60 * time.Second, 300 * time.Second, 900 * time.Second}, 0.2)
	if p.MaxAttempts() != 4 {
		t.Fatalf("max attempts %d", p.MaxAttempts())
	}
	for attempt, want := range map[int]time.Duration{1: 60 * time.Second, 2: 300 * time.Second, 3: 900 * time.Second} {
		for range 200 {
			tier, d, ok := p.Next(attempt)
			if !ok || tier.Delay != want || d < want*8/10 || d > want*12/10 {
				t.Fatalf("attempt %d: %v %v %v", attempt, tier, d, ok)
			}
		}
	}
	if tier, _, _ := p.Next(1); tier.Topic() != "docflow.retry.60s" {
		t.Fatalf("topic %s", tier.Topic())
	}
	if _, _, ok := p.Next(4); ok {
		t.Fatal("a fifth attempt")
	}
	p.rand = func() float64 { return 1 }
	if _, d, _ := p.Next(1); d != 72*time.Second {
		t.Fatalf("upper jitter %v", d)
	}
}

func TestParseSettings(t *testing.T) {
	t.Parallel()
	d, err := ParseDelays("60s, 300, 1.5m,250ms")
	if err != nil || len(d) != 4 || d[0] != time.Minute || d[1] != 5*time.Minute || d[2] != 90*time.Second || d[3] != 250*time.Millisecond {
		t.Fatalf("%v %v", d, err)
	}
	if _, err := ParseDelays("soon"); err == nil {
		t.Fatal("bad delay accepted")
	}
	if d, err := ParseDelays(""); err != nil || d != nil {
		t.Fatalf("empty: %v %v", d, err)
	}
	s, err := ParsePoolSizes("ocr=2, convert_to_pdf=3")
	if err != nil || s["ocr"] != 2 || s["convert_to_pdf"] != 3 {
		t.Fatalf("%v %v", s, err)
	}
	if _, err := ParsePoolSizes("ocr=lots"); err == nil {
		t.Fatal("bad size accepted")
	}
}

func TestErrorClassification(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err       error
		class     string
		permanent bool
	}{
		{actors.NewPanicError("boom"), ClassPanic, false},
		{fmt.Errorf("%w after 1s", actors.ErrTimeout), ClassTimeout, false},
		{docflow.Errorf(docflow.EINVALID, "corrupt"), ClassInvalid, true},
		{fmt.Errorf("wrapped: %w", docflow.Errorf(docflow.EINVALID, "corrupt")), ClassInvalid, true},
		{docflow.Errorf(docflow.EUNAVAILABLE, "tesseract missing"), ClassUnavailable, false},
		{errors.New("flaky"), ClassError, false},
	} {
		if got := errorClass(c.err); got != c.class || permanent(c.err) != c.permanent {
			t.Errorf("%v: class %s permanent %v", c.err, got, permanent(c.err))
		}
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := NewRegistry(teststep.New())
	if _, ok := r.Lookup(docflow.StepTest); !ok {
		t.Fatal("lookup")
	}
	if err := r.Register(teststep.New()); err == nil {
		t.Fatal("duplicate registered")
	}
	known := r.KnownTypes()
	if len(known) != len(docflow.StandardSteps)+1 || known[len(known)-1] != docflow.StepTest {
		t.Fatalf("known %v", known)
	}
}

func TestMetricsMiddleware(t *testing.T) {
	t.Parallel()
	rec := &captureRecorder{}
	clock := time.Unix(1000, 0)
	now := func() time.Time { clock = clock.Add(10 * time.Millisecond); return clock }
	owner := "alice"
	in := &docflow.StepInput{RunID: "r", StepType: "ocr", Attempt: 2, File: &docflow.File{ID: 7, OwnerID: &owner}}
	ok := withMetrics(rec, now)(func(context.Context, *docflow.StepInput) (*docflow.StepResult, error) {
		return &docflow.StepResult{Bytes: 42}, nil
	})
	skip := withMetrics(rec, now)(func(context.Context, *docflow.StepInput) (*docflow.StepResult, error) {
		return &docflow.StepResult{Skipped: true}, nil
	})
	fail := withMetrics(rec, now)(func(context.Context, *docflow.StepInput) (*docflow.StepResult, error) {
		return nil, actors.NewPanicError("boom")
	})
	_, _ = ok(context.Background(), in)
	_, _ = skip(context.Background(), in)
	if _, err := fail(context.Background(), in); err == nil {
		t.Fatal("error swallowed")
	}
	ms := rec.all()
	if len(ms) != 3 {
		t.Fatalf("%d metrics", len(ms))
	}
	if m := ms[0]; m.Kind != docflow.MetricStep || m.Status != docflow.StepSucceeded || m.Bytes != 42 || m.Duration != 10*time.Millisecond ||
		m.FileID != 7 || m.OwnerID != "alice" || m.Attempt != 2 || m.StepType != "ocr" || m.RunID != "r" {
		t.Fatalf("ok metric %+v", m)
	}
	if ms[1].Status != docflow.StepSkipped || ms[2].Status != docflow.StepFailed || ms[2].ErrorClass != ClassPanic {
		t.Fatalf("metrics %+v", ms)
	}
}

// The engine waits for the database only when the store says it is away
// (EUNAVAILABLE); it reads no driver error codes.
func TestTransientDBReadsTheCode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{docflow.Errorf(docflow.EUNAVAILABLE, "Database unavailable"), true},
		{fmt.Errorf("claim 1 steps: %w", docflow.Errorf(docflow.EUNAVAILABLE, "Database unavailable")), true},
		{fmt.Errorf("stopping: %w", errors.Join(context.Canceled, docflow.Errorf(docflow.EUNAVAILABLE, "x"))), false},
		{docflow.Errorf(docflow.ENOTFOUND, "Referenced record not found"), false},
		{errors.New("syntax error at or near"), false},
	} {
		if got := transientDB(c.err); got != c.want {
			t.Errorf("transientDB(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A goroutine the engine spawns (a step's recording) that panics is
// recovered: the process goes on, its deferred work runs, and Stop's wait
// for the engine's goroutines still ends; once stopping, spawn drops its
// work.
func TestSpawnRecoversAndIsWaitedFor(t *testing.T) {
	e := &Engine{log: zerolog.Nop()}
	deferred := make(chan struct{})
	e.spawn("test", func() {
		defer close(deferred)
		panic("recording exploded")
	})
	<-deferred
	e.wg.Wait()
	e.stopping = true
	ran := false
	e.spawn("test", func() { ran = true })
	e.wg.Wait()
	if ran {
		t.Fatal("spawned while stopping")
	}
}
