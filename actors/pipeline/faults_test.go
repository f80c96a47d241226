package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
	"docflow/storage/postgres"
	"docflow/streams"
	"docflow/streams/streamstest"
)

// failedAfterRetries checks a file that failed on its test step after every
// attempt, with want in its log, a dead letter and a failure event.
func (e *env) failedAfterRetries(id int64, run string, attempts int, want string) {
	e.t.Helper()
	r := e.run(run)
	st := r.Steps[0]
	if r.Status != docflow.RunFailed || st.Status != docflow.StepFailed || st.Attempts != attempts || !strings.Contains(st.Message, want) {
		e.t.Fatalf("run %+v step %+v", r, st)
	}
	logs := e.logs(id)
	last := logs[len(logs)-1]
	if last.Status != docflow.StepFailed || !strings.Contains(last.Message, want) {
		e.t.Fatalf("last log %+v", last)
	}
	retrying := 0
	for _, l := range logs {
		if l.Status == docflow.StepRetrying {
			retrying++
			if !strings.Contains(l.Message, want) {
				e.t.Fatalf("retry log without the cause: %+v", l)
			}
		}
	}
	if retrying != attempts-1 {
		e.t.Fatalf("%d retry log rows, want %d: %+v", retrying, attempts-1, logs)
	}
	found := false
	for _, dl := range e.outbox(streams.TopicDLQ) {
		if strings.Contains(dl["payload"], run) {
			found = true
			if !strings.Contains(dl[streams.HeaderReason], want) || dl[streams.HeaderStep] != docflow.StepTest ||
				dl[streams.HeaderAttempt] != fmt.Sprint(attempts) {
				e.t.Fatalf("dead letter headers %v", dl)
			}
		}
	}
	if !found {
		e.t.Fatal("no dead letter")
	}
	failed := 0
	for _, ev := range e.outbox(streams.TopicEvents) {
		if strings.Contains(ev["payload"], docflow.EventDocumentFailed) && strings.Contains(ev["payload"], run) {
			failed++
		}
	}
	if failed != 1 {
		e.t.Fatalf("%d document.failed events", failed)
	}
}

func TestPanickingStepFailsOnlyItsDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	p := e.pipeline("panicky", map[string]any{"mode": "panic", "match": "bad"}, map[string]any{})
	var good []int64
	var goodRuns []string
	for i := range 4 {
		id, run := e.ingest(fmt.Sprintf("good%d.pdf", i), fmt.Sprint("good", i), &p.ID, nil)
		good = append(good, id)
		goodRuns = append(goodRuns, run)
	}
	bad, badRun := e.ingest("bad.pdf", "bad", &p.ID, nil)
	got := e.waitTerminal(time.Minute, append(good, bad)...)
	for _, id := range good {
		if got[id] != docflow.StatusCompleted {
			t.Fatalf("good file %d: %s", id, got[id])
		}
	}
	e.completedExactlyOnce(goodRuns...)
	if got[bad] != docflow.StatusFailed {
		t.Fatalf("bad file: %s", got[bad])
	}
	e.failedAfterRetries(bad, badRun, 3, "panic: test step panicked on bad.pdf")
	if r := e.run(badRun); r.Steps[1].Status != docflow.StepQueued {
		t.Fatalf("the step after the failed one ran: %+v", r.Steps[1])
	}
	classes := 0
	for _, m := range e.Metrics.all() {
		if m.Kind == docflow.MetricStep && m.RunID == badRun && m.ErrorClass == ClassPanic {
			classes++
		}
	}
	if classes != 3 {
		t.Fatalf("%d panic metrics", classes)
	}
}

func TestHangingStepTimesOut(t *testing.T) {
	// Serial: the step that does not hang must finish within the 300 ms
	// step timeout at its first attempt; other tests on the CPU could delay it.
	e := newEnv(t, func(c *Config) { c.StepTimeout = 300 * time.Millisecond })
	p := e.pipeline("hangs", map[string]any{"mode": "hang", "match": "hang"})
	ok, okRun := e.ingest("fine.pdf", "fine", &p.ID, nil)
	id, run := e.ingest("hang.pdf", "hang", &p.ID, nil)
	got := e.waitTerminal(time.Minute, ok, id)
	if got[ok] != docflow.StatusCompleted || got[id] != docflow.StatusFailed {
		t.Fatalf("statuses %v", got)
	}
	e.completedExactlyOnce(okRun)
	e.failedAfterRetries(id, run, 3, "timed out")
}

func TestInvalidDocumentIsNotRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	p := e.pipeline("strict", map[string]any{"mode": "invalid"})
	id, run := e.ingest("refused.pdf", "refused", &p.ID, nil)
	if s := e.waitTerminal(time.Minute, id)[id]; s != docflow.StatusFailed {
		t.Fatalf("status %s", s)
	}
	e.failedAfterRetries(id, run, 1, "refused the document")
}

func TestPoisonMessagesAreDeadLettered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, topic := range []string{streams.StepTopic(docflow.StepTest), streams.TopicFilesIngested} {
		if err := e.Prod.Publish(e.ctx, streams.Message{Topic: topic, Key: []byte("1"), Value: []byte("{not json")}); err != nil {
			t.Fatal(err)
		}
	}
	// The consumers keep going.
	p := e.pipeline("after poison", map[string]any{})
	var ids []int64
	for i := range 8 {
		id, _ := e.ingest(fmt.Sprintf("p%d.pdf", i), fmt.Sprint("p", i), &p.ID, nil)
		ids = append(ids, id)
	}
	for id, s := range e.waitTerminal(time.Minute, ids...) {
		if s != docflow.StatusCompleted {
			t.Fatalf("file %d: %s", id, s)
		}
	}
	dls := streamstest.ReadTopic(t, e.Brokers, streams.TopicDLQ, 4, 2, 3*time.Minute)
	if len(dls) != 2 {
		t.Fatalf("%d dead letters", len(dls))
	}
	steps := map[string]bool{}
	for _, m := range dls {
		if string(m.Value) != "{not json" || !strings.Contains(streams.HeaderValue(m, streams.HeaderReason), "decode envelope") {
			t.Fatalf("dead letter %q headers %v", m.Value, m.Headers)
		}
		steps[streams.HeaderValue(m, streams.HeaderStep)] = true
	}
	if !steps["router"] || !steps[docflow.StepTest] {
		t.Fatalf("dead letter steps %v", steps)
	}
}

// blockDatabase makes the test database refuse connections and ends the
// open ones, for d.
func blockDatabase(t *testing.T, db *postgres.DB, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, postgres.TestServerURL())
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
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname=$1 AND pid <> pg_backend_pid()`, name); err != nil {
			t.Fatal(err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func TestPostgresUnavailableForTenSeconds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("takes 10 s of outage")
	}
	e := newEnv(t, nil)
	p := e.pipeline("slow", map[string]any{"sleep_ms": 40.0}, map[string]any{"sleep_ms": 40.0}, map[string]any{"title": "done"})
	var ids []int64
	var runs []string
	for i := range 30 {
		id, run := e.ingest(fmt.Sprintf("db%d.pdf", i), fmt.Sprint("db", i), &p.ID, nil)
		ids = append(ids, id)
		runs = append(runs, run)
	}
	// Let some finish, then pull the database away mid-flight.
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		_ = e.DB.Pool.QueryRow(e.ctx, `SELECT count(*) FROM files WHERE status='completed'`).Scan(&n)
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	var done int
	_ = e.DB.Pool.QueryRow(e.ctx, `SELECT count(*) FROM files WHERE status='completed'`).Scan(&done)
	if done == len(ids) {
		t.Fatal("everything finished before the outage")
	}
	blockDatabase(t, e.DB, 10*time.Second)
	t.Logf("%d of %d files were finished when the database went away", done, len(ids))
	for id, s := range e.waitTerminal(60*time.Second, ids...) {
		if s != docflow.StatusCompleted {
			t.Fatalf("file %d: %s; logs %+v", id, s, e.logs(id))
		}
	}
	e.completedExactlyOnce(runs...)
}

func TestBrokerRestartWithTasksInFlight(t *testing.T) {
	// Serial: it restarts the broker on the port it had, which a test
	// starting meanwhile could take.
	e := newEnv(t, nil)
	p := e.pipeline("slow", map[string]any{"sleep_ms": 100.0}, map[string]any{"sleep_ms": 100.0}, map[string]any{"sleep_ms": 100.0})
	var ids []int64
	var runs []string
	for i := range 20 {
		id, run := e.ingest(fmt.Sprintf("br%d.pdf", i), fmt.Sprint("br", i), &p.ID, nil)
		ids = append(ids, id)
		runs = append(runs, run)
	}
	// Wait until steps are running, then take everything down at once:
	// the in-memory broker loses every message and offset.
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		_ = e.DB.Pool.QueryRow(e.ctx, `SELECT count(*) FROM run_steps WHERE status IN ('running', 'completed')`).Scan(&n)
		if n >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	_ = e.Engine.Stop(ctx)
	cancel()
	e.Relay.Close()
	_ = e.Prod.Close()
	e.Broker.Close()
	var unfinished int
	_ = e.DB.Pool.QueryRow(e.ctx, `SELECT count(*) FROM runs WHERE status IN ('pending', 'processing')`).Scan(&unfinished)
	if unfinished == 0 {
		t.Fatal("everything finished before the restart")
	}
	// Restart on the same port; recovery re-publishes what is unfinished.
	e.startBroker()
	e.startEngine()
	for id, s := range e.waitTerminal(60*time.Second, ids...) {
		if s != docflow.StatusCompleted {
			t.Fatalf("file %d: %s; logs %+v", id, s, e.logs(id))
		}
	}
	e.completedExactlyOnce(runs...)
	t.Logf("%d of %d runs were unfinished at the restart", unfinished, len(runs))
}

func TestPipelineDeletedWhileFilesInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	p := e.pipeline("doomed", map[string]any{"sleep_ms": 100.0}, map[string]any{"sleep_ms": 100.0}, map[string]any{"title": "kept"})
	var ids []int64
	var runs []string
	for i := range 6 {
		id, run := e.ingest(fmt.Sprintf("del%d.pdf", i), fmt.Sprint("del", i), &p.ID, nil)
		ids = append(ids, id)
		runs = append(runs, run)
	}
	waitRouted := time.Now().Add(time.Minute)
	for {
		var n int
		_ = e.DB.Pool.QueryRow(e.ctx, `SELECT count(DISTINCT run_id) FROM run_steps WHERE run_id = ANY($1)`, runs).Scan(&n)
		if n == len(runs) || time.Now().After(waitRouted) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := e.Pipes.DeletePipeline(e.ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	// A file still pointing at the deleted pipeline falls back to the
	// default one.
	e.msgPipeline = &p.ID
	late, lateRun := e.ingest("late.pdf", "late", nil, nil)
	got := e.waitTerminal(time.Minute, append(ids, late)...)
	for id, s := range got {
		if s != docflow.StatusCompleted {
			t.Fatalf("file %d: %s; logs %+v", id, s, e.logs(id))
		}
	}
	e.completedExactlyOnce(runs...)
	if r := e.run(runs[0]); r.PipelineID != nil || len(r.Steps) != 3 {
		t.Fatalf("run after delete %+v", r)
	}
	if l := e.logs(late); !strings.Contains(l[0].Message, "Standard Processing Pipeline") {
		t.Fatalf("late file routing %+v", l[0])
	}
	if r := e.run(lateRun); len(r.Steps) != len(docflow.StandardSteps) || r.Status != docflow.RunCompleted {
		t.Fatalf("late run %+v", r)
	}
}

func TestStalledRunIsFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.StallTimeout = 500 * time.Millisecond; c.StallInterval = 100 * time.Millisecond })
	// A run whose task was lost: routed, then nothing.
	var fileID int64
	err := pgx.BeginFunc(e.ctx, e.DB.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(e.ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, task_id)
			VALUES ('h', 'lost.pdf', 's.pdf', 1, 'application/pdf', 'processing', 'lost-run') RETURNING id`).Scan(&fileID); err != nil {
			return err
		}
		if _, err := tx.Exec(e.ctx, `INSERT INTO runs (id, file_id, status, updated_at) VALUES ('lost-run', $1, 'processing', now() - interval '1 hour')`, fileID); err != nil {
			return err
		}
		_, err := tx.Exec(e.ctx, `INSERT INTO run_steps (run_id, position, step_type, status, attempts) VALUES
			('lost-run', 0, 'test', 'completed', 1), ('lost-run', 1, 'test', 'queued', 0)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := e.waitTerminal(time.Minute, fileID)[fileID]; s != docflow.StatusFailed {
		t.Fatalf("status %s", s)
	}
	r := e.run("lost-run")
	if r.Status != docflow.RunFailed || r.Steps[1].Status != docflow.StepFailed || !strings.Contains(r.Steps[1].Message, "Stalled") {
		t.Fatalf("run %+v %+v", r, r.Steps[1])
	}
	if l := e.logs(fileID); len(l) != 1 || l[0].Status != docflow.StepFailed || !strings.Contains(l[0].Message, "Stalled") {
		t.Fatalf("logs %+v", l)
	}
}

func TestReprocessSupersedesRunInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	p := e.pipeline("slow", map[string]any{"sleep_ms": 200.0}, map[string]any{"sleep_ms": 200.0}, map[string]any{"title": "second"})
	id, oldRun := e.ingest("re.pdf", "re", &p.ID, nil)
	for e.fileStatus(id) != docflow.StatusProcessing {
		time.Sleep(5 * time.Millisecond)
	}
	// Reprocess: a new run becomes the file's current one.
	newRun := "reprocess-run"
	err := pgx.BeginFunc(e.ctx, e.DB.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(e.ctx, `INSERT INTO runs (id, file_id, status) VALUES ($1, $2, 'pending')`, newRun, id); err != nil {
			return err
		}
		if _, err := tx.Exec(e.ctx, `UPDATE files SET task_id=$2, status='pending' WHERE id=$1`, id, newRun); err != nil {
			return err
		}
		m, err := streams.FileIngestedMessage(streams.FileIngested{FileID: id, RunID: newRun, PipelineID: &p.ID}, time.Now())
		if err != nil {
			return err
		}
		return postgres.Enqueue(e.ctx, tx, m)
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for e.run(newRun).Status != docflow.RunCompleted {
		if time.Now().After(deadline) {
			t.Fatalf("new run %+v", e.run(newRun))
		}
		time.Sleep(20 * time.Millisecond)
	}
	for e.run(oldRun).Status == docflow.RunProcessing && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if s := e.run(oldRun).Status; s != docflow.RunSuperseded && s != docflow.RunCompleted {
		t.Fatalf("old run %s", s)
	}
	if s := e.fileStatus(id); s != docflow.StatusCompleted {
		t.Fatalf("file %s", s)
	}
}
