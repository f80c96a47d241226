package postgres

import (
	"context"
	"testing"
	"time"

	"docflow"
)

// newRun records a file with a routed run of n queued steps.
func newRun(t *testing.T, db *DB, runID string, n int) int64 {
	t.Helper()
	ctx := context.Background()
	var fileID int64
	if err := db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, task_id)
		VALUES ($1, 'a.pdf', 's.pdf', 1, 'application/pdf', $1) RETURNING id`, runID).Scan(&fileID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO runs (id, file_id) VALUES ($1, $2)`, runID, fileID); err != nil {
		t.Fatal(err)
	}
	steps := make([]*docflow.PipelineStep, n)
	for i := range steps {
		steps[i] = &docflow.PipelineStep{StepType: "test", Label: "t", Enabled: true}
	}
	w, err := NewRunStore(db).StartRun(ctx, runID, fileID, nil, steps, "routed")
	if err != nil || !w.Recorded {
		t.Fatalf("start run: %v %v", w, err)
	}
	return fileID
}

func TestClaimAndRecordAreIdempotent(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	s := NewRunStore(db)
	fileID := newRun(t, db, "run-1", 2)
	// Routing twice records the steps once.
	if w, err := s.StartRun(ctx, "run-1", fileID, nil, nil, "again"); err != nil || w.Recorded {
		t.Fatalf("second start: %v %v", w, err)
	}
	req := ClaimRequest{RunID: "run-1", Position: 0, Attempt: 1, Worker: "w1", TTL: time.Minute}
	c, err := s.ClaimStep(ctx, req)
	if err != nil || c.Outcome != ClaimOK || c.File.ID != fileID || c.Next == nil || c.Next.Position != 1 || c.Total != 2 {
		t.Fatalf("claim: %+v %v", c, err)
	}
	var fs, rs string
	_ = db.Pool.QueryRow(ctx, `SELECT f.status, r.status FROM files f JOIN runs r ON r.file_id=f.id WHERE r.id='run-1'`).Scan(&fs, &rs)
	if fs != docflow.StatusProcessing || rs != docflow.RunProcessing {
		t.Fatalf("after claim: file %s run %s", fs, rs)
	}
	// Another worker finds the step busy while the holder's heartbeat is
	// fresh; the holder may claim again.
	if err := s.Heartbeat(ctx, WorkerBeat{ID: "w1", Host: "h", PID: 1}); err != nil {
		t.Fatal(err)
	}
	other := req
	other.Worker = "w2"
	if c, _ := s.ClaimStep(ctx, other); c.Outcome != ClaimBusy {
		t.Fatalf("other worker: %+v", c)
	}
	if c, _ := s.ClaimStep(ctx, req); c.Outcome != ClaimOK {
		t.Fatalf("holder again: %+v", c)
	}
	// A worker without a heartbeat is dead: its lease can be taken over.
	other.DeadAfter = time.Millisecond
	if c, _ := s.ClaimStep(ctx, other); c.Outcome != ClaimOK {
		t.Fatalf("take over from a dead worker: %+v", c)
	}
	// The old holder's result is refused now.
	rec := StepRecord{RunID: "run-1", Position: 0, Attempt: 1, Worker: "w1", FileID: fileID, StepType: "test", Status: docflow.StepSucceeded, Message: "ok"}
	m := docflow.OutboxMessage{Topic: "docflow.steps.test", Key: "1", Payload: []byte("next")}
	if w, err := s.CompleteStep(ctx, rec, m); err != nil || w.Recorded {
		t.Fatalf("stale holder recorded: %v %v", w, err)
	}
	rec.Worker = "w2"
	if w, err := s.CompleteStep(ctx, rec, m); err != nil || !w.Recorded {
		t.Fatalf("record: %v %v", w, err)
	}
	if w, err := s.CompleteStep(ctx, rec, m); err != nil || w.Recorded {
		t.Fatalf("recorded twice: %v %v", w, err)
	}
	// A redelivered task of the recorded step is acknowledged.
	if c, _ := s.ClaimStep(ctx, req); c.Outcome != ClaimDone {
		t.Fatalf("redelivery: %+v", c)
	}
	var outbox, logs int
	_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE payload = 'next'`).Scan(&outbox)
	_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM processing_logs WHERE task_id='run-1' AND status='completed'`).Scan(&logs)
	if outbox != 1 || logs != 1 {
		t.Fatalf("outbox %d logs %d", outbox, logs)
	}

	// Retry: a stale attempt is acknowledged, the next one claims.
	req = ClaimRequest{RunID: "run-1", Position: 1, Attempt: 1, Worker: "w1", TTL: time.Minute}
	if c, _ := s.ClaimStep(ctx, req); c.Outcome != ClaimOK || c.Next != nil {
		t.Fatalf("claim last step: %+v", c)
	}
	rec = StepRecord{RunID: "run-1", Position: 1, Attempt: 1, Worker: "w1", FileID: fileID, StepType: "test", Message: "flaky"}
	if w, err := s.RetryStep(ctx, rec); err != nil || !w.Recorded {
		t.Fatalf("retry: %v %v", w, err)
	}
	if c, _ := s.ClaimStep(ctx, req); c.Outcome != ClaimDone {
		t.Fatalf("stale attempt: %+v", c)
	}
	req.Attempt = 2
	if c, _ := s.ClaimStep(ctx, req); c.Outcome != ClaimOK {
		t.Fatalf("attempt 2: %+v", c)
	}
	rec.Attempt, rec.Status, rec.FinishRun = 2, docflow.StepSucceeded, docflow.RunCompleted
	if w, err := s.CompleteStep(ctx, rec); err != nil || !w.Recorded {
		t.Fatalf("complete: %v %v", w, err)
	}
	r, err := s.FindRun(ctx, "run-1")
	if err != nil || r.Status != docflow.RunCompleted || r.FinishedAt == nil || r.Steps[1].Attempts != 2 {
		t.Fatalf("run %+v %v", r, err)
	}
	_ = db.Pool.QueryRow(ctx, `SELECT status FROM files WHERE id=$1`, fileID).Scan(&fs)
	if fs != docflow.StatusCompleted {
		t.Fatalf("file %s", fs)
	}
	if n, _ := s.PendingCount(ctx); n != 0 {
		t.Fatalf("pending %d", n)
	}
}

func TestWriteThroughOutboxRows(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	s := NewRunStore(db).WithDirectOutbox(time.Hour)
	fileID := newRun(t, db, "run-2", 1)
	if c, err := s.ClaimStep(ctx, ClaimRequest{RunID: "run-2", Position: 0, Attempt: 1, Worker: "w", TTL: time.Minute}); err != nil || c.Outcome != ClaimOK {
		t.Fatalf("claim %+v %v", c, err)
	}
	rec := StepRecord{RunID: "run-2", Position: 0, Attempt: 1, Worker: "w", FileID: fileID, StepType: "test",
		Status: docflow.StepSucceeded, FinishRun: docflow.RunCompleted}
	w, err := s.CompleteStep(ctx, rec,
		docflow.OutboxMessage{Topic: "docflow.events", Key: "1", Payload: []byte("a")},
		docflow.OutboxMessage{Topic: "docflow.events", Key: "1", Payload: []byte("b")})
	if err != nil || !w.Recorded || len(w.OutboxIDs) != 2 {
		t.Fatalf("record %+v %v", w, err)
	}
	// Held back from the relay until marked sent.
	var due int
	_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE sent_at IS NULL AND available_at <= now()`).Scan(&due)
	if due != 0 {
		t.Fatalf("%d rows due for the relay", due)
	}
	if err := s.MarkSent(ctx, w.OutboxIDs); err != nil {
		t.Fatal(err)
	}
	var unsent int
	_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE sent_at IS NULL`).Scan(&unsent)
	if unsent != 0 {
		t.Fatalf("%d rows unsent", unsent)
	}
}

// ClaimSteps and CompleteSteps answer each request as ClaimStep and
// CompleteStep would, in request order, in one statement each.
func TestBatchedClaimsAndResults(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	s := NewRunStore(db).WithDirectOutbox(time.Minute)
	fa := newRun(t, db, "run-b", 2)
	fb := newRun(t, db, "run-a", 1)
	fc := newRun(t, db, "run-c", 1)
	// run-c is taken by another worker first.
	if c, err := s.ClaimStep(ctx, ClaimRequest{RunID: "run-c", Position: 0, Attempt: 1, Worker: "w2", TTL: time.Minute}); err != nil || c.Outcome != ClaimOK {
		t.Fatalf("claim run-c: %+v %v", c, err)
	}
	if err := s.Heartbeat(ctx, WorkerBeat{ID: "w2", Host: "h", PID: 2}); err != nil {
		t.Fatal(err)
	}
	req := func(run string, pos int) ClaimRequest {
		return ClaimRequest{RunID: run, Position: pos, Attempt: 1, Worker: "w1", TTL: time.Minute}
	}
	got := s.ClaimSteps(ctx, []ClaimRequest{req("run-b", 0), req("run-c", 0), req("gone", 0), req("run-a", 0)})
	if len(got) != 4 {
		t.Fatalf("%d answers", len(got))
	}
	for i, want := range []int{ClaimOK, ClaimBusy, ClaimDone, ClaimOK} {
		if got[i].Err != nil || got[i].Claim == nil || got[i].Claim.Outcome != want {
			t.Fatalf("answer %d: %+v", i, got[i])
		}
	}
	b, a := got[0].Claim, got[3].Claim
	if b.File.ID != fa || b.Step.RunID != "run-b" || b.Step.Attempts != 1 || b.Next == nil || b.Next.Position != 1 || b.Total != 2 {
		t.Fatalf("run-b claim: %+v", b)
	}
	if a.File.ID != fb || a.Step.RunID != "run-a" || a.Next != nil || a.Total != 1 {
		t.Fatalf("run-a claim: %+v", a)
	}
	rec := func(run string, file int64, worker string) StepRecord {
		return StepRecord{RunID: run, Position: 0, Attempt: 1, Worker: worker, FileID: file, StepType: "test", Status: docflow.StepSucceeded, Message: "ok"}
	}
	last := rec("run-a", fb, "w1")
	last.FinishRun = docflow.RunCompleted
	msg := func(p string) docflow.OutboxMessage {
		return docflow.OutboxMessage{Topic: "docflow.steps.test", Key: p, Payload: []byte(p)}
	}
	ws, err := s.CompleteSteps(ctx, []StepCompletion{
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
	payload := func(id int64) string {
		var p []byte
		if err := db.Pool.QueryRow(ctx, `SELECT payload FROM outbox WHERE id=$1`, id).Scan(&p); err != nil {
			t.Fatal(err)
		}
		return string(p)
	}
	if payload(ws[0].OutboxIDs[0]) != "b" || payload(ws[2].OutboxIDs[0]) != "a1" || payload(ws[2].OutboxIDs[1]) != "a2" {
		t.Fatal("outbox ids do not match their results")
	}
	var runA, fileA, stepB, runB string
	_ = db.Pool.QueryRow(ctx, `SELECT r.status, f.status FROM runs r JOIN files f ON f.id = r.file_id WHERE r.id='run-a'`).Scan(&runA, &fileA)
	_ = db.Pool.QueryRow(ctx, `SELECT rs.status, r.status FROM run_steps rs JOIN runs r ON r.id = rs.run_id WHERE rs.run_id='run-b' AND rs.position=0`).Scan(&stepB, &runB)
	if runA != docflow.RunCompleted || fileA != docflow.StatusCompleted || stepB != docflow.StepSucceeded || runB != docflow.RunProcessing {
		t.Fatalf("run-a %s/%s, run-b step %s run %s", runA, fileA, stepB, runB)
	}
	var logs int
	_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM processing_logs WHERE task_id IN ('run-a', 'run-b', 'run-c') AND step_name='test'`).Scan(&logs)
	if logs != 2 {
		t.Fatalf("%d step log rows, want 2", logs)
	}
	// Recording again changes nothing.
	ws, err = s.CompleteSteps(ctx, []StepCompletion{{Record: rec("run-b", fa, "w1")}, {Record: last}})
	if err != nil || ws[0].Recorded || ws[1].Recorded {
		t.Fatalf("second record: %+v %v", ws, err)
	}
}
