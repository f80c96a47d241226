// Package storetest is the contract every pipeline.Store implementation
// passes (storage/postgres.RunStore runs it against PostgreSQL): claims,
// results, routing, recovery, stall detection, heartbeats and the queue
// summary, with the guards that make a repeated write change nothing.
package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/actors/pipeline"
)

// Backend is a store under test with what the suite needs besides the
// engine's interface: runs to start from, and a look at what was written.
type Backend interface {
	pipeline.Store
	// NewRun records a file with a pending run runID that is not routed
	// yet (as intake does) and returns the file's id.
	NewRun(t *testing.T, runID string) int64
	// Reprocess points the file at a new pending run runID: the run it had
	// is no longer its current one.
	Reprocess(t *testing.T, fileID int64, runID string)
	// FindRun returns the run with its steps, or ENOTFOUND.
	FindRun(ctx context.Context, runID string) (*docflow.Run, error)
	// File returns the file as stored.
	File(t *testing.T, id int64) *docflow.File
	// Logs returns the file's processing log in the order written.
	Logs(t *testing.T, fileID int64) []*docflow.ProcessingLog
	// Outbox returns every outbox message written, in the order written.
	Outbox(t *testing.T) []docflow.OutboxRow
	// Age moves the run's progress (its own times and its steps') back
	// by d.
	Age(t *testing.T, runID string, d time.Duration)
}

// Run runs the suite. newBackend returns an empty store that reports the
// outbox rows it writes (a write-through store: RunWrite.OutboxIDs) and
// registers its own cleanup. The subtests run in parallel, so newBackend
// is called from several goroutines at once.
func Run(t *testing.T, newBackend func(t *testing.T) Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"RoutingRecordsStepsOnce", testRouting},
		{"StartRunWithGonePipeline", testGonePipeline},
		{"EmptyPipelineCompletesAtOnce", testEmptyPipeline},
		{"ClaimAndRecordAreIdempotent", testClaimAndRecord},
		{"BatchedClaimsAndResults", testBatched},
		{"FailStepFailsTheRun", testFailStep},
		{"SupersededRunIsNotClaimed", testSuperseded},
		{"LeaseRenewal", testRenewLease},
		{"StalledRuns", testStalled},
		{"UnfinishedRuns", testUnfinished},
		{"WorkersAndQueueSummary", testWorkers},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newBackend(t))
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// steps returns n enabled steps of the test type.
func steps(n int) []*docflow.PipelineStep {
	out := make([]*docflow.PipelineStep, n)
	for i := range out {
		out[i] = &docflow.PipelineStep{StepType: docflow.StepTest, Label: "t", Enabled: true, Config: map[string]any{"n": float64(i)}}
	}
	return out
}

// route records a file with a run routed to n test steps.
func route(t *testing.T, b Backend, runID string, n int) int64 {
	t.Helper()
	fileID := b.NewRun(t, runID)
	w, err := b.StartRun(ctx(t), runID, fileID, nil, steps(n), "routed")
	if err != nil || !w.Recorded {
		t.Fatalf("start run %s: %+v %v", runID, w, err)
	}
	return fileID
}

func claimOne(t *testing.T, b Backend, req docflow.StepClaimRequest) (*docflow.StepClaim, error) {
	t.Helper()
	r := b.ClaimSteps(ctx(t), []docflow.StepClaimRequest{req})
	if len(r) != 1 {
		t.Fatalf("%d answers to one claim", len(r))
	}
	return r[0].Claim, r[0].Err
}

func mustClaim(t *testing.T, b Backend, req docflow.StepClaimRequest, want int) *docflow.StepClaim {
	t.Helper()
	c, err := claimOne(t, b, req)
	if err != nil || c == nil || c.Outcome != want {
		t.Fatalf("claim %s/%d attempt %d by %s: %+v %v, want outcome %d", req.RunID, req.Position, req.Attempt, req.Worker, c, err, want)
	}
	return c
}

func runStatus(t *testing.T, b Backend, runID string) *docflow.Run {
	t.Helper()
	r, err := b.FindRun(ctx(t), runID)
	if err != nil {
		t.Fatalf("find run %s: %v", runID, err)
	}
	return r
}

func payloads(rows []docflow.OutboxRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = string(r.Payload)
	}
	return out
}

func msg(payload string) docflow.OutboxMessage {
	return docflow.OutboxMessage{Topic: "docflow.steps.test", Key: "k", Payload: []byte(payload)}
}

func testRouting(t *testing.T, b Backend) {
	c := ctx(t)
	if _, err := b.RunForRouting(c, "no-such-run"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("unknown run: %v, want ENOTFOUND", err)
	}
	fileID := b.NewRun(t, "run-r")
	st, err := b.RunForRouting(c, "run-r")
	if err != nil || st.RunID != "run-r" || st.Status != docflow.RunPending || st.Routed || st.File == nil || st.File.ID != fileID || st.Options == nil {
		t.Fatalf("routing state: %+v %v", st, err)
	}
	w, err := b.StartRun(c, "run-r", fileID, nil, steps(2), "Pipeline x", msg("first"))
	if err != nil || !w.Recorded || len(w.OutboxIDs) != 1 {
		t.Fatalf("start run: %+v %v", w, err)
	}
	// Routing twice records the steps once.
	if w, err := b.StartRun(c, "run-r", fileID, nil, steps(3), "again", msg("again")); err != nil || w.Recorded || len(w.OutboxIDs) != 0 {
		t.Fatalf("second start: %+v %v", w, err)
	}
	if st, err := b.RunForRouting(c, "run-r"); err != nil || !st.Routed {
		t.Fatalf("routed run: %+v %v", st, err)
	}
	r := runStatus(t, b, "run-r")
	if len(r.Steps) != 2 || r.Steps[0].Position != 0 || r.Steps[1].Position != 1 || r.Steps[0].Status != docflow.StepQueued ||
		r.Steps[1].Config["n"] != float64(1) {
		t.Fatalf("steps: %+v", r.Steps)
	}
	if got := payloads(b.Outbox(t)); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("outbox %v", got)
	}
	logs := b.Logs(t, fileID)
	if len(logs) != 1 || logs[0].StepName != "pipeline" || logs[0].TaskID != "run-r" || logs[0].Message != "Pipeline x" {
		t.Fatalf("logs %+v", logs)
	}
}

func testGonePipeline(t *testing.T, b Backend) {
	c := ctx(t)
	fileID := b.NewRun(t, "run-g")
	gone := int64(987654321)
	if _, err := b.StartRun(c, "run-g", fileID, &gone, steps(1), "routed", msg("task")); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("start run with a gone pipeline: %v, want ENOTFOUND", err)
	}
	if st, err := b.RunForRouting(c, "run-g"); err != nil || st.Routed {
		t.Fatalf("after a refused start: %+v %v", st, err)
	}
	if got := b.Outbox(t); len(got) != 0 {
		t.Fatalf("outbox %v", payloads(got))
	}
}

func testEmptyPipeline(t *testing.T, b Backend) {
	c := ctx(t)
	fileID := b.NewRun(t, "run-e")
	if w, err := b.StartRun(c, "run-e", fileID, nil, nil, "empty", msg("processed")); err != nil || !w.Recorded {
		t.Fatalf("start: %+v %v", w, err)
	}
	if r := runStatus(t, b, "run-e"); r.Status != docflow.RunCompleted || r.FinishedAt == nil || len(r.Steps) != 0 {
		t.Fatalf("run %+v", r)
	}
	if f := b.File(t, fileID); f.Status != docflow.StatusCompleted {
		t.Fatalf("file %s", f.Status)
	}
	if n, err := b.PendingCount(c); err != nil || n != 0 {
		t.Fatalf("pending %d %v", n, err)
	}
}

func testClaimAndRecord(t *testing.T, b Backend) {
	c := ctx(t)
	fileID := route(t, b, "run-1", 2)
	req := docflow.StepClaimRequest{RunID: "run-1", Position: 0, Attempt: 1, Worker: "w1", TTL: time.Minute}
	cl, err := claimOne(t, b, req)
	if err != nil || cl.Outcome != docflow.StepClaimOK || cl.File.ID != fileID || cl.Next == nil || cl.Next.Position != 1 || cl.Total != 2 ||
		cl.Step.Attempts != 1 || cl.Step.StepType != docflow.StepTest || cl.Step.Config["n"] != float64(0) {
		t.Fatalf("claim: %+v %v", cl, err)
	}
	if f := b.File(t, fileID); f.Status != docflow.StatusProcessing {
		t.Fatalf("file after claim: %s", f.Status)
	}
	if r := runStatus(t, b, "run-1"); r.Status != docflow.RunProcessing {
		t.Fatalf("run after claim: %s", r.Status)
	}
	// Another worker finds the step busy while the holder's heartbeat is
	// fresh; the holder may claim again.
	if err := b.Heartbeat(c, docflow.WorkerBeat{ID: "w1", Host: "h", PID: 1}); err != nil {
		t.Fatal(err)
	}
	other := req
	other.Worker = "w2"
	mustClaim(t, b, other, docflow.StepClaimBusy)
	mustClaim(t, b, req, docflow.StepClaimOK)
	// A worker without a heartbeat is dead: its lease can be taken over.
	other.DeadAfter = time.Millisecond
	mustClaim(t, b, other, docflow.StepClaimOK)
	// The old holder's result is refused now.
	rec := docflow.StepRecord{RunID: "run-1", Position: 0, Attempt: 1, Worker: "w1", FileID: fileID, StepType: docflow.StepTest,
		Status: docflow.StepSucceeded, Message: "ok"}
	m := msg("next")
	if w, err := b.CompleteStep(c, rec, m); err != nil || w.Recorded {
		t.Fatalf("stale holder recorded: %v %v", w, err)
	}
	rec.Worker = "w2"
	if w, err := b.CompleteStep(c, rec, m); err != nil || !w.Recorded {
		t.Fatalf("record: %v %v", w, err)
	}
	if w, err := b.CompleteStep(c, rec, m); err != nil || w.Recorded {
		t.Fatalf("recorded twice: %v %v", w, err)
	}
	// A redelivered task of the recorded step is acknowledged.
	mustClaim(t, b, req, docflow.StepClaimDone)
	next, completed := 0, 0
	for _, r := range b.Outbox(t) {
		if string(r.Payload) == "next" {
			next++
		}
	}
	for _, l := range b.Logs(t, fileID) {
		if l.TaskID == "run-1" && l.Status == docflow.StepSucceeded {
			completed++
		}
	}
	if next != 1 || completed != 1 {
		t.Fatalf("outbox %d logs %d", next, completed)
	}

	// Retry: a stale attempt is acknowledged, the next one claims.
	req = docflow.StepClaimRequest{RunID: "run-1", Position: 1, Attempt: 1, Worker: "w1", TTL: time.Minute}
	if cl := mustClaim(t, b, req, docflow.StepClaimOK); cl.Next != nil {
		t.Fatalf("claim last step: %+v", cl)
	}
	rec = docflow.StepRecord{RunID: "run-1", Position: 1, Attempt: 1, Worker: "w1", FileID: fileID, StepType: docflow.StepTest, Message: "flaky"}
	if w, err := b.RetryStep(c, rec); err != nil || !w.Recorded {
		t.Fatalf("retry: %v %v", w, err)
	}
	if r := runStatus(t, b, "run-1"); r.Steps[1].Status != docflow.StepRetrying {
		t.Fatalf("step after retry: %s", r.Steps[1].Status)
	}
	mustClaim(t, b, req, docflow.StepClaimDone)
	req.Attempt = 2
	mustClaim(t, b, req, docflow.StepClaimOK)
	rec.Attempt, rec.Status, rec.FinishRun = 2, docflow.StepSucceeded, docflow.RunCompleted
	if w, err := b.CompleteStep(c, rec); err != nil || !w.Recorded {
		t.Fatalf("complete: %v %v", w, err)
	}
	r := runStatus(t, b, "run-1")
	if r.Status != docflow.RunCompleted || r.FinishedAt == nil || r.Steps[1].Attempts != 2 {
		t.Fatalf("run %+v", r)
	}
	if f := b.File(t, fileID); f.Status != docflow.StatusCompleted {
		t.Fatalf("file %s", f.Status)
	}
	if n, err := b.PendingCount(c); err != nil || n != 0 {
		t.Fatalf("pending %d %v", n, err)
	}
}

// ClaimSteps and CompleteSteps answer each request as a single claim and
// CompleteStep would, in request order.
func testBatched(t *testing.T, b Backend) {
	c := ctx(t)
	fa := route(t, b, "run-b", 2)
	fb := route(t, b, "run-a", 1)
	fc := route(t, b, "run-c", 1)
	// run-c is taken by another worker first.
	mustClaim(t, b, docflow.StepClaimRequest{RunID: "run-c", Position: 0, Attempt: 1, Worker: "w2", TTL: time.Minute}, docflow.StepClaimOK)
	if err := b.Heartbeat(c, docflow.WorkerBeat{ID: "w2", Host: "h", PID: 2}); err != nil {
		t.Fatal(err)
	}
	req := func(run string, pos int) docflow.StepClaimRequest {
		return docflow.StepClaimRequest{RunID: run, Position: pos, Attempt: 1, Worker: "w1", TTL: time.Minute}
	}
	got := b.ClaimSteps(c, []docflow.StepClaimRequest{req("run-b", 0), req("run-c", 0), req("gone", 0), req("run-a", 0)})
	if len(got) != 4 {
		t.Fatalf("%d answers", len(got))
	}
	for i, want := range []int{docflow.StepClaimOK, docflow.StepClaimBusy, docflow.StepClaimDone, docflow.StepClaimOK} {
		if got[i].Err != nil || got[i].Claim == nil || got[i].Claim.Outcome != want {
			t.Fatalf("answer %d: %+v", i, got[i])
		}
	}
	bc, ac := got[0].Claim, got[3].Claim
	if bc.File.ID != fa || bc.Step.RunID != "run-b" || bc.Step.Attempts != 1 || bc.Next == nil || bc.Next.Position != 1 || bc.Total != 2 {
		t.Fatalf("run-b claim: %+v", bc)
	}
	if ac.File.ID != fb || ac.Step.RunID != "run-a" || ac.Next != nil || ac.Total != 1 {
		t.Fatalf("run-a claim: %+v", ac)
	}
	rec := func(run string, file int64, worker string) docflow.StepRecord {
		return docflow.StepRecord{RunID: run, Position: 0, Attempt: 1, Worker: worker, FileID: file, StepType: docflow.StepTest,
			Status: docflow.StepSucceeded, Message: "ok"}
	}
	last := rec("run-a", fb, "w1")
	last.FinishRun = docflow.RunCompleted
	before := len(b.Outbox(t))
	ws, err := b.CompleteSteps(c, []docflow.StepCompletion{
		{Record: rec("run-b", fa, "w1"), Msgs: []docflow.OutboxMessage{msg("b")}},
		{Record: rec("run-c", fc, "w1"), Msgs: []docflow.OutboxMessage{msg("c")}}, // not ours: refused
		{Record: last, Msgs: []docflow.OutboxMessage{msg("a1"), msg("a2")}},
	})
	if err != nil || len(ws) != 3 {
		t.Fatalf("complete: %v %v", ws, err)
	}
	if !ws[0].Recorded || ws[1].Recorded || !ws[2].Recorded || len(ws[0].OutboxIDs) != 1 || len(ws[1].OutboxIDs) != 0 || len(ws[2].OutboxIDs) != 2 {
		t.Fatalf("written: %+v %+v %+v", ws[0], ws[1], ws[2])
	}
	byID := map[int64]string{}
	rows := b.Outbox(t)
	for _, r := range rows {
		byID[r.ID] = string(r.Payload)
	}
	if byID[ws[0].OutboxIDs[0]] != "b" || byID[ws[2].OutboxIDs[0]] != "a1" || byID[ws[2].OutboxIDs[1]] != "a2" {
		t.Fatal("outbox ids do not match their results")
	}
	if len(rows)-before != 3 {
		t.Fatalf("%d outbox rows written, want 3", len(rows)-before)
	}
	ra, rb := runStatus(t, b, "run-a"), runStatus(t, b, "run-b")
	if ra.Status != docflow.RunCompleted || b.File(t, fb).Status != docflow.StatusCompleted ||
		rb.Steps[0].Status != docflow.StepSucceeded || rb.Status != docflow.RunProcessing {
		t.Fatalf("run-a %s/%s, run-b step %s run %s", ra.Status, b.File(t, fb).Status, rb.Steps[0].Status, rb.Status)
	}
	logs := 0
	for _, f := range []int64{fa, fb, fc} {
		for _, l := range b.Logs(t, f) {
			if l.StepName == docflow.StepTest {
				logs++
			}
		}
	}
	if logs != 2 {
		t.Fatalf("%d step log rows, want 2", logs)
	}
	// Recording again changes nothing.
	ws, err = b.CompleteSteps(c, []docflow.StepCompletion{{Record: rec("run-b", fa, "w1")}, {Record: last}})
	if err != nil || ws[0].Recorded || ws[1].Recorded {
		t.Fatalf("second record: %+v %v", ws, err)
	}
}

func testFailStep(t *testing.T, b Backend) {
	c := ctx(t)
	fileID := route(t, b, "run-f", 2)
	req := docflow.StepClaimRequest{RunID: "run-f", Position: 0, Attempt: 3, Worker: "w1", TTL: time.Minute}
	mustClaim(t, b, req, docflow.StepClaimOK)
	rec := docflow.StepRecord{RunID: "run-f", Position: 0, Attempt: 3, Worker: "w1", FileID: fileID, StepType: docflow.StepTest, Message: "broken"}
	w, err := b.FailStep(c, rec, msg("dead letter"), msg("failed event"))
	if err != nil || !w.Recorded || len(w.OutboxIDs) != 2 {
		t.Fatalf("fail: %+v %v", w, err)
	}
	r := runStatus(t, b, "run-f")
	if r.Status != docflow.RunFailed || r.FinishedAt == nil || r.Steps[0].Status != docflow.StepFailed || r.Steps[1].Status != docflow.StepQueued {
		t.Fatalf("run %+v steps %+v %+v", r, r.Steps[0], r.Steps[1])
	}
	if f := b.File(t, fileID); f.Status != docflow.StatusFailed {
		t.Fatalf("file %s", f.Status)
	}
	if w, err := b.FailStep(c, rec, msg("again")); err != nil || w.Recorded {
		t.Fatalf("failed twice: %+v %v", w, err)
	}
	// Nothing of a failed run is claimed any more.
	mustClaim(t, b, docflow.StepClaimRequest{RunID: "run-f", Position: 1, Attempt: 1, Worker: "w1", TTL: time.Minute}, docflow.StepClaimDone)
	if got := payloads(b.Outbox(t)); !slices.Equal(got, []string{"dead letter", "failed event"}) {
		t.Fatalf("outbox %v", got)
	}
}

func testSuperseded(t *testing.T, b Backend) {
	c := ctx(t)
	fileID := route(t, b, "run-old", 1)
	b.Reprocess(t, fileID, "run-new")
	cl := mustClaim(t, b, docflow.StepClaimRequest{RunID: "run-old", Position: 0, Attempt: 1, Worker: "w1", TTL: time.Minute}, docflow.StepClaimDone)
	if !strings.Contains(cl.Reason, "superseded") {
		t.Fatalf("reason %q", cl.Reason)
	}
	r := runStatus(t, b, "run-old")
	if r.Status != docflow.RunSuperseded || r.Steps[0].Status != docflow.StepSkipped {
		t.Fatalf("old run %s, step %s", r.Status, r.Steps[0].Status)
	}
	// The router ends a superseded run the same way; twice changes nothing.
	st, err := b.RunForRouting(c, "run-new")
	if err != nil || st.File.TaskID != "run-new" {
		t.Fatalf("new run: %+v %v", st, err)
	}
	for range 2 {
		if err := b.SupersedeRun(c, "run-old"); err != nil {
			t.Fatal(err)
		}
	}
	if r := runStatus(t, b, "run-new"); r.Status != docflow.RunPending {
		t.Fatalf("new run %s", r.Status)
	}
}

func testRenewLease(t *testing.T, b Backend) {
	c := ctx(t)
	route(t, b, "run-l", 1)
	mustClaim(t, b, docflow.StepClaimRequest{RunID: "run-l", Position: 0, Attempt: 1, Worker: "w1", TTL: time.Minute}, docflow.StepClaimOK)
	if ok, err := b.RenewLease(c, "run-l", 0, "w1", time.Minute); err != nil || !ok {
		t.Fatalf("holder renews: %v %v", ok, err)
	}
	if ok, err := b.RenewLease(c, "run-l", 0, "w2", time.Minute); err != nil || ok {
		t.Fatalf("another worker renews: %v %v", ok, err)
	}
	if ok, err := b.RenewLease(c, "no-such-run", 0, "w1", time.Minute); err != nil || ok {
		t.Fatalf("unknown step renewed: %v %v", ok, err)
	}
	// Taken over by a worker after the lease lapsed: the old holder lost it.
	mustClaim(t, b, docflow.StepClaimRequest{RunID: "run-l", Position: 0, Attempt: 1, Worker: "w2", TTL: time.Minute, DeadAfter: time.Millisecond},
		docflow.StepClaimOK)
	if ok, err := b.RenewLease(c, "run-l", 0, "w1", time.Minute); err != nil || ok {
		t.Fatalf("old holder renews after a takeover: %v %v", ok, err)
	}
}

func stalled(t *testing.T, b Backend, timeout time.Duration, busy []string) []string {
	t.Helper()
	runs, err := b.StalledRuns(ctx(t), timeout, busy, 100)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.RunID
	}
	slices.Sort(ids)
	return ids
}

func testStalled(t *testing.T, b Backend) {
	c := ctx(t)
	fresh := route(t, b, "run-fresh", 1)
	_ = fresh
	idle := route(t, b, "run-idle", 2)
	leased := route(t, b, "run-leased", 1)
	b.Age(t, "run-idle", 2*time.Minute)
	// A run without progress is stalled; one routed just now is not.
	runs, err := b.StalledRuns(c, time.Minute, nil, 100)
	if err != nil || len(runs) != 1 || runs[0].RunID != "run-idle" || runs[0].FileID != idle || runs[0].Step == nil ||
		runs[0].Step.Position != 0 || runs[0].Step.StepType != docflow.StepTest || runs[0].Status != docflow.RunPending {
		t.Fatalf("stalled %+v %v", runs, err)
	}
	// Its task waits in the queue of a busy step type: not stalled.
	if got := stalled(t, b, time.Minute, []string{docflow.StepTest}); len(got) != 0 {
		t.Fatalf("queued behind a busy type: %v", got)
	}
	// A step under a live lease is not stalled however old the run.
	mustClaim(t, b, docflow.StepClaimRequest{RunID: "run-leased", Position: 0, Attempt: 1, Worker: "w1", TTL: time.Minute}, docflow.StepClaimOK)
	b.Age(t, "run-leased", 2*time.Minute)
	if got := stalled(t, b, time.Minute, nil); !slices.Equal(got, []string{"run-idle"}) {
		t.Fatalf("stalled %v", got)
	}
	if busy, err := b.BusyStepTypes(c); err != nil || !slices.Equal(busy, []string{docflow.StepTest}) {
		t.Fatalf("busy %v %v", busy, err)
	}
	// Failing checks again: not while the run is under a live lease.
	if ok, err := b.FailRun(c, "run-leased", time.Minute, nil, "stalled"); err != nil || ok {
		t.Fatalf("leased run failed: %v %v", ok, err)
	}
	ok, err := b.FailRun(c, "run-idle", time.Minute, nil, "Stalled: no progress", msg("failed event"))
	if err != nil || !ok {
		t.Fatalf("fail stalled run: %v %v", ok, err)
	}
	if ok, err := b.FailRun(c, "run-idle", time.Minute, nil, "again", msg("again")); err != nil || ok {
		t.Fatalf("failed twice: %v %v", ok, err)
	}
	r := runStatus(t, b, "run-idle")
	if r.Status != docflow.RunFailed || r.Steps[0].Status != docflow.StepFailed || r.Steps[1].Status != docflow.StepFailed {
		t.Fatalf("failed run %s steps %s %s", r.Status, r.Steps[0].Status, r.Steps[1].Status)
	}
	if f := b.File(t, idle); f.Status != docflow.StatusFailed {
		t.Fatalf("file %s", f.Status)
	}
	logs := b.Logs(t, idle)
	if l := logs[len(logs)-1]; l.Status != docflow.StepFailed || l.Message != "Stalled: no progress" || l.StepName != docflow.StepTest {
		t.Fatalf("last log %+v", l)
	}
	if got := payloads(b.Outbox(t)); !slices.Equal(got, []string{"failed event"}) {
		t.Fatalf("outbox %v", got)
	}
	if got := stalled(t, b, time.Minute, nil); len(got) != 0 {
		t.Fatalf("stalled after failing: %v", got)
	}
	if r := runStatus(t, b, "run-leased"); r.Status != docflow.RunProcessing || b.File(t, leased).Status != docflow.StatusProcessing {
		t.Fatalf("leased run %s", r.Status)
	}
}

func testUnfinished(t *testing.T, b Backend) {
	c := ctx(t)
	unrouted := b.NewRun(t, "run-u1")
	routed := route(t, b, "run-u2", 2)
	done := route(t, b, "run-u3", 1)
	mustClaim(t, b, docflow.StepClaimRequest{RunID: "run-u3", Position: 0, Attempt: 1, Worker: "w1", TTL: time.Minute}, docflow.StepClaimOK)
	if w, err := b.CompleteStep(c, docflow.StepRecord{RunID: "run-u3", Position: 0, Attempt: 1, Worker: "w1", FileID: done,
		StepType: docflow.StepTest, Status: docflow.StepSucceeded, FinishRun: docflow.RunCompleted}); err != nil || !w.Recorded {
		t.Fatalf("complete: %+v %v", w, err)
	}
	// The second run's first step is leased, then retried.
	mustClaim(t, b, docflow.StepClaimRequest{RunID: "run-u2", Position: 0, Attempt: 1, Worker: "w1", TTL: time.Minute}, docflow.StepClaimOK)
	if w, err := b.RetryStep(c, docflow.StepRecord{RunID: "run-u2", Position: 0, Attempt: 1, Worker: "w1", FileID: routed,
		StepType: docflow.StepTest, Message: "flaky"}); err != nil || !w.Recorded {
		t.Fatalf("retry: %+v %v", w, err)
	}
	runs, err := b.UnfinishedRuns(c, "", 100)
	if err != nil || len(runs) != 2 {
		t.Fatalf("unfinished %+v %v", runs, err)
	}
	u1, u2 := runs[0], runs[1]
	if u1.RunID != "run-u1" || u1.FileID != unrouted || u1.Routed || u1.Step != nil || u1.Pending || u1.Options == nil {
		t.Fatalf("unrouted run %+v", u1)
	}
	if u2.RunID != "run-u2" || u2.FileID != routed || !u2.Routed || u2.Step == nil || u2.Step.Position != 0 ||
		u2.Step.Status != docflow.StepRetrying || u2.Step.Attempts != 1 || u2.LeaseLive {
		t.Fatalf("routed run %+v step %+v", u2, u2.Step)
	}
	// Pages by run id.
	if runs, err := b.UnfinishedRuns(c, "run-u1", 100); err != nil || len(runs) != 1 || runs[0].RunID != "run-u2" {
		t.Fatalf("second page %+v %v", runs, err)
	}
	// An unsent message about the file is the relay's to publish.
	if err := b.Republish(c, docflow.OutboxMessage{Topic: "docflow.files.ingested", Key: fmt.Sprint(unrouted), Payload: []byte("again")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Republish(c); err != nil {
		t.Fatal(err)
	}
	runs, err = b.UnfinishedRuns(c, "", 1)
	if err != nil || len(runs) != 1 || !runs[0].Pending {
		t.Fatalf("after republishing: %+v %v", runs, err)
	}
	if got := payloads(b.Outbox(t)); !slices.Contains(got, "again") {
		t.Fatalf("outbox %v", got)
	}
}

func testWorkers(t *testing.T, b Backend) {
	c := ctx(t)
	f1 := route(t, b, "run-w1", 1)
	f2 := route(t, b, "run-w2", 1)
	b.NewRun(t, "run-w3")
	if err := b.Heartbeat(c, docflow.WorkerBeat{ID: "w1", Host: "h", PID: 1, StepTypes: []string{docflow.StepTest}, InFlight: 3}); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, b, docflow.StepClaimRequest{RunID: "run-w1", Position: 0, Attempt: 1, Worker: "w1", TTL: time.Minute}, docflow.StepClaimOK)
	mustClaim(t, b, docflow.StepClaimRequest{RunID: "run-w2", Position: 0, Attempt: 1, Worker: "w1", TTL: time.Minute}, docflow.StepClaimOK)
	if w, err := b.RetryStep(c, docflow.StepRecord{RunID: "run-w2", Position: 0, Attempt: 1, Worker: "w1", FileID: f2,
		StepType: docflow.StepTest, Message: "flaky"}); err != nil || !w.Recorded {
		t.Fatalf("retry: %+v %v", w, err)
	}
	q, err := b.QueueSummary(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w := q.Workers
	if w.WorkersOnline != 1 || len(w.Active) != 1 || w.Reserved != 2 || w.Scheduled != 1 {
		t.Fatalf("workers %+v", w)
	}
	a := w.Active[0]
	if a.ID != "run-w1" || a.Name != docflow.StepTest || a.Worker != "w1" || fmt.Sprint(a.Args) != fmt.Sprint([]any{f1, 1}) || a.Started == nil {
		t.Fatalf("active %+v", a)
	}
	d := q.DBSummary
	if d.TotalFiles != 3 || d.Processing != 2 || d.Pending != 1 || len(d.RecentProcessing) != 2 {
		t.Fatalf("db summary %+v", d)
	}
	if n, err := b.PendingCount(c); err != nil || n != 3 {
		t.Fatalf("pending %d %v", n, err)
	}
	if err := b.RemoveWorker(c, "w1"); err != nil {
		t.Fatal(err)
	}
	if q, err := b.QueueSummary(c, 10*time.Second); err != nil || q.Workers.WorkersOnline != 0 {
		t.Fatalf("after removing the worker: %+v %v", q, err)
	}
}
