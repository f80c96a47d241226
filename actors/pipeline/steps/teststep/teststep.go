// Package teststep is the pipeline's test step type, kept out of the
// production steps: the engine's tests, the fault drills and the benchmarks
// use it, and a process registers it only when ENABLE_TEST_STEP is set
// (internal/app), for the multi-process tests that run the real binary.
package teststep

import (
	"context"
	"fmt"
	"strings"
	"time"

	"docflow"
)

// New returns the test step (type docflow.StepTest), the step type faults
// are drilled with. Its config says what to do:
//
//	mode      ok (default), fail, invalid, panic, hang (ignores its
//	          context), stall (waits for its context)
//	times     act on the first n attempts only, then succeed (0 = always)
//	match     act only on files whose original name contains this
//	sleep_ms  sleep this long first (honouring the context)
//	title     on success, set the document title to this (shows that file
//	          changes are saved)
func New() docflow.Step { return docflow.StepFunc{Name: docflow.StepTest, Fn: runTestStep} }

func runTestStep(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	cfg := in.Config
	str := func(k string) string { s, _ := cfg[k].(string); return s }
	num := func(k string) int {
		switch v := cfg[k].(type) {
		case float64:
			return int(v)
		case int:
			return v
		}
		return 0
	}
	if ms := num("sleep_ms"); ms > 0 {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	act := true
	if m := str("match"); m != "" && !strings.Contains(in.File.OriginalFilename, m) {
		act = false
	}
	if n := num("times"); n > 0 && in.Attempt > n {
		act = false
	}
	if act {
		switch str("mode") {
		case "fail":
			return nil, fmt.Errorf("test step failed on attempt %d", in.Attempt)
		case "invalid":
			return nil, docflow.Errorf(docflow.EINVALID, "test step refused the document")
		case "panic":
			panic(fmt.Sprintf("test step panicked on %s", in.File.OriginalFilename))
		case "hang":
			time.Sleep(24 * time.Hour) // ignores its context on purpose
		case "stall":
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	if t := str("title"); t != "" {
		in.File.DocumentTitle = &t
	}
	return &docflow.StepResult{Message: fmt.Sprintf("test step %s ok", in.Label)}, nil
}
