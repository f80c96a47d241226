package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
	"docflow/streams"
)

func TestDocumentFlowsThroughItsPipeline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	p := e.pipeline("three", map[string]any{}, map[string]any{"title": "Hello"}, map[string]any{"sleep_ms": 5.0})
	var ids []int64
	var runs []string
	for i := range 5 {
		id, run := e.ingest("doc"+string(rune('a'+i))+".pdf", "content "+string(rune('a'+i)), &p.ID, nil)
		ids = append(ids, id)
		runs = append(runs, run)
	}
	got := e.waitTerminal(time.Minute, ids...)
	for id, s := range got {
		if s != docflow.StatusCompleted {
			t.Fatalf("file %d: %s; logs %+v", id, s, e.logs(id))
		}
	}
	e.completedExactlyOnce(runs...)
	// Every step claimed and every result went through a shared
	// transaction, and GroupStats counted them.
	if g := e.Engine.GroupStats(); g.Claims < 15 || g.Results < 15 || g.ClaimBatches < 1 || g.ClaimBatches > g.Claims ||
		g.ResultBatches < 1 || g.ResultBatches > g.Results {
		t.Fatalf("group stats %+v: want at least 15 claims and results, in 1 to as many batches", g)
	}
	r := e.run(runs[0])
	if r.Status != docflow.RunCompleted || len(r.Steps) != 3 || r.PipelineID == nil || *r.PipelineID != p.ID || r.FinishedAt == nil {
		t.Fatalf("run %+v", r)
	}
	var title *string
	if err := e.DB.Pool.QueryRow(e.ctx, `SELECT document_title FROM files WHERE id=$1`, ids[0]).Scan(&title); err != nil || title == nil || *title != "Hello" {
		t.Fatalf("title %v %v", title, err)
	}
	logs := e.logs(ids[0])
	if len(logs) != 4 || logs[0].StepName != "pipeline" || !strings.Contains(logs[0].Message, `"three" (assigned)`) ||
		logs[3].StepName != docflow.StepTest || logs[3].Status != docflow.StepSucceeded {
		t.Fatalf("logs %+v", logs)
	}
	events := e.outbox(streams.TopicEvents)
	processed := 0
	for _, ev := range events {
		if strings.Contains(ev["payload"], docflow.EventDocumentProcessed) {
			processed++
		}
	}
	if processed != 5 {
		t.Fatalf("%d document.processed events: %v", processed, events)
	}
	// One metric per attempt, off the hot path: a document's metric is
	// recorded once its completion is committed, so it may follow the
	// status seen above by a moment.
	var steps, docs int
	count := func() {
		steps, docs = 0, 0
		for _, m := range e.Metrics.all() {
			if m.Kind == docflow.MetricStep && m.StepType == docflow.StepTest && m.Status == docflow.StepSucceeded && m.Attempt == 1 && m.RunID != "" && m.FileID > 0 {
				steps++
			}
			if m.Kind == docflow.MetricDocument {
				docs++
			}
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if count(); steps >= 15 && docs >= 5 || time.Now().After(deadline) {
			break
		}
	}
	for _, m := range e.Metrics.all() {
		if m.Kind == docflow.MetricStep && m.StepType == docflow.StepTest && m.Status == docflow.StepSucceeded && m.Attempt == 1 && m.RunID != "" && m.FileID > 0 &&
			(m.Worker == "" || m.QueueWait <= 0 || m.BytesIn <= 0) {
			t.Errorf("step metric without worker, queue wait or bytes in: %+v", m)
		}
		if m.Kind == docflow.MetricDocument && (m.Status != docflow.StepSucceeded || m.Duration <= 0 || m.FileID <= 0) {
			t.Errorf("document metric %+v", m)
		}
	}
	if steps != 15 || docs != 5 {
		t.Fatalf("%d step metrics, want 15; %d document metrics, want 5", steps, docs)
	}
}

func TestRoutingAtIntake(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	invoices := e.pipeline("invoices", map[string]any{"title": "routed"})
	other := e.pipeline("other", map[string]any{"title": "assigned"})
	empty := e.pipeline("empty")
	rules := postgres.NewRoutingStore(e.DB)
	if err := rules.CreateRule(e.ctx, &docflow.RoutingRule{Name: "inv", Position: -1, Field: "filename", Operator: "regex",
		Value: `inv-\d+\.pdf`, TargetPipelineID: invoices.ID, IsActive: true}); err != nil {
		t.Fatal(err)
	}
	if err := rules.CreateRule(e.ctx, &docflow.RoutingRule{Name: "empty", Position: -1, Field: "filename", Operator: "contains",
		Value: "nothing", TargetPipelineID: empty.ID, IsActive: true}); err != nil {
		t.Fatal(err)
	}
	byRule, _ := e.ingest("INV-42.pdf", "a", nil, nil)
	assigned, _ := e.ingest("INV-43.pdf", "b", &other.ID, nil) // explicit assignment wins
	none, noneRun := e.ingest("nothing.pdf", "c", nil, nil)    // an empty pipeline completes at once
	e.waitTerminal(time.Minute, byRule, assigned, none)
	for id, want := range map[int64]string{byRule: "routed", assigned: "assigned"} {
		var title *string
		_ = e.DB.Pool.QueryRow(e.ctx, `SELECT document_title FROM files WHERE id=$1`, id).Scan(&title)
		if title == nil || *title != want {
			t.Fatalf("file %d title %v, want %s; logs %+v", id, title, want, e.logs(id))
		}
	}
	if r := e.run(noneRun); r.Status != docflow.RunCompleted || len(r.Steps) != 0 {
		t.Fatalf("empty pipeline run %+v", r)
	}
	if l := e.logs(byRule); !strings.Contains(l[0].Message, `routing rule "inv"`) {
		t.Fatalf("routing log %+v", l[0])
	}
}

func TestRetryThenSucceed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	p := e.pipeline("flaky", map[string]any{"mode": "fail", "times": 2.0})
	id, run := e.ingest("flaky.pdf", "x", &p.ID, nil)
	if s := e.waitTerminal(time.Minute, id)[id]; s != docflow.StatusCompleted {
		t.Fatalf("status %s; logs %+v", s, e.logs(id))
	}
	r := e.run(run)
	if r.Steps[0].Attempts != 3 || r.Steps[0].Status != docflow.StepSucceeded {
		t.Fatalf("step %+v", r.Steps[0])
	}
	var retrying int
	for _, l := range e.logs(id) {
		if l.Status == docflow.StepRetrying {
			retrying++
		}
	}
	if retrying != 2 {
		t.Fatalf("logs %+v", e.logs(id))
	}
	// Each retry went through a delay topic.
	if n := len(e.outbox("docflow.retry.30ms")) + len(e.outbox("docflow.retry.60ms")); n != 2 {
		t.Fatalf("%d delayed tasks", n)
	}
}

func TestRedeliveredTaskIsNotRunAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	p := e.pipeline("one", map[string]any{})
	id, run := e.ingest("once.pdf", "once", &p.ID, nil)
	e.waitTerminal(time.Minute, id)
	before := len(e.logs(id))
	// A copy of the task, as a broker would redeliver it.
	m, err := streams.StepTaskMessage(streams.StepTask{RunID: run, FileID: id, Position: 0, StepType: docflow.StepTest, Attempt: 1}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Prod.Publish(e.ctx, streams.Message{Topic: m.Topic, Key: []byte(m.Key), Value: m.Payload}); err != nil {
		t.Fatal(err)
	}
	// A later document on the same key completes, so the copy was consumed.
	id2, _ := e.ingest("twice.pdf", "twice", &p.ID, nil)
	e.waitTerminal(time.Minute, id2)
	time.Sleep(200 * time.Millisecond)
	if after := len(e.logs(id)); after != before {
		t.Fatalf("redelivered task re-ran: %d log rows, then %d", before, after)
	}
	e.completedExactlyOnce(run)
}

// A retry waiting in the delay relay does not hold the engine's Stop: the
// relay releases it, unacknowledged, for the next worker, and Stop
// returns well before its deadline.
func TestStopReleasesWaitingRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.RetryDelays = []time.Duration{time.Hour} })
	p := e.pipeline("flaky", map[string]any{"mode": "fail", "times": 1.0})
	id, _ := e.ingest("later.pdf", "later", &p.ID, nil)
	// The retry tiers' consumer is the engine's last.
	delay := e.Engine.consumers[len(e.Engine.consumers)-1]
	testsupport.WaitFor(t, time.Minute, "the retry held by the delay relay", func() bool {
		retrying := false
		for _, l := range e.logs(id) {
			retrying = retrying || l.Status == docflow.StepRetrying
		}
		return retrying && delay.InFlight() > 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.Engine.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Stop took %v with a retry due in an hour", d)
	}
}
