package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

func TestWriteThroughOutboxRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	s := NewRunStore(db).WithDirectOutbox(time.Hour)
	fileID := newRun(t, db, "run-2", 1)
	if c, err := s.ClaimStep(ctx, docflow.StepClaimRequest{RunID: "run-2", Position: 0, Attempt: 1, Worker: "w", TTL: time.Minute}); err != nil || c.Outcome != docflow.StepClaimOK {
		t.Fatalf("claim %+v %v", c, err)
	}
	rec := docflow.StepRecord{RunID: "run-2", Position: 0, Attempt: 1, Worker: "w", FileID: fileID, StepType: "test",
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

// The engine's store reports the database being away as EUNAVAILABLE (the
// engine waits and tries again) without the engine reading PostgreSQL's
// error codes; the contract suite covers ENOTFOUND for a gone pipeline.
func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	s := NewRunStore(db)
	fileID := newRun(t, db, "run-u", 1)
	admin, err := pgx.Connect(ctx, TestServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := db.Pool.Config().ConnConfig.Database
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+ident+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := admin.Exec(ctx, "ALTER DATABASE "+ident+" ALLOW_CONNECTIONS true"); err != nil {
			t.Error(err)
		}
	}()
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname=$1 AND pid <> pg_backend_pid()`, name); err != nil {
		t.Fatal(err)
	}
	qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	claim := s.ClaimSteps(qctx, []docflow.StepClaimRequest{{RunID: "run-u", Position: 0, Attempt: 1, Worker: "w", TTL: time.Minute}})
	_, recErr := s.CompleteStep(qctx, docflow.StepRecord{RunID: "run-u", Position: 0, Attempt: 1, Worker: "w", FileID: fileID,
		StepType: "test", Status: docflow.StepSucceeded})
	_, routeErr := s.RunForRouting(qctx, "run-u")
	_, pipeErr := NewPipelineStore(db).FindPipelineByID(qctx, 1)
	_, defErr := NewPipelineStore(db).DefaultPipeline(qctx, nil)
	_, rulesErr := NewRoutingStore(db).ActiveRules(qctx, nil)
	for name, err := range map[string]error{"claim": claim[0].Err, "complete": recErr, "run for routing": routeErr,
		"heartbeat": s.Heartbeat(qctx, docflow.WorkerBeat{ID: "w"}), "find pipeline": pipeErr, "default pipeline": defErr,
		"active rules": rulesErr} {
		if err == nil || docflow.ErrorCode(err) != docflow.EUNAVAILABLE {
			t.Errorf("%s with the database away: %v (code %s), want EUNAVAILABLE", name, err, docflow.ErrorCode(err))
		}
	}
}

// Routers racing on copies of one run's "ingested" message: one records
// the run's steps, the others are told it was routed already, none gets
// an error (a unique violation of run_steps was one, logged as such).
func TestStartRunRacingRouters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	s := NewRunStore(db)
	steps := []*docflow.PipelineStep{{StepType: "test", Label: "a", Enabled: true}, {StepType: "test", Label: "b", Enabled: true}}
	for round := range 20 {
		runID := fmt.Sprintf("race-%d", round)
		var fileID int64
		if err := db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, task_id)
			VALUES ($1, 'a.pdf', 's.pdf', 1, 'application/pdf', $1) RETURNING id`, runID).Scan(&fileID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO runs (id, file_id) VALUES ($1, $2)`, runID, fileID); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var recorded atomic.Int32
		start := make(chan struct{})
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				w, err := s.StartRun(ctx, runID, fileID, nil, steps, "routed")
				if err != nil {
					t.Errorf("%s: %v", runID, err)
					return
				}
				if w.Recorded {
					recorded.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM run_steps WHERE run_id = $1`, runID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if recorded.Load() != 1 || n != 2 {
			t.Fatalf("%s: recorded by %d routers, %d steps", runID, recorded.Load(), n)
		}
	}
}
