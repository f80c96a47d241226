package pipeline

import (
	"testing"
	"time"

	"docflow"
	"docflow/streams"
)

func TestInspectorReportsLagAndWorkers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.StepTypes = []string{docflow.StepTest} })
	p := e.pipeline("one", map[string]any{})
	id, _ := e.ingest("q.pdf", "q", &p.ID, nil)
	e.waitTerminal(time.Minute, id)
	// Nobody here consumes OCR tasks: they wait in the topic.
	for i := range 5 {
		m, err := streams.StepTaskMessage(streams.StepTask{RunID: "r", FileID: int64(i + 1), StepType: docflow.StepOCR, Attempt: 1}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Prod.Publish(e.ctx, streams.Message{Topic: m.Topic, Key: []byte(m.Key), Value: m.Payload}); err != nil {
			t.Fatal(err)
		}
	}
	in := NewInspector(e.Brokers, e.Store, append([]string{docflow.StepTest}, docflow.StandardSteps...))
	deadline := time.Now().Add(time.Minute)
	var st *docflow.QueueStats
	for {
		var err error
		st, err = in.QueueStats(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		// An empty map is a look-up that did not answer in time (a
		// loaded machine), not empty queues: wait for the state itself.
		if st.Queues[streams.StepTopic(docflow.StepOCR)] == 5 && st.Queues[streams.StepTopic(docflow.StepTest)] == 0 &&
			st.Queues[streams.TopicFilesIngested] == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Queues[streams.StepTopic(docflow.StepOCR)] != 5 || st.Queues[streams.StepTopic(docflow.StepTest)] != 0 || st.TotalQueued != 5 {
		t.Fatalf("queues %v total %d", st.Queues, st.TotalQueued)
	}
	if st.Workers.WorkersOnline != 1 || st.DBSummary.TotalFiles != 1 || st.DBSummary.Completed != 1 {
		t.Fatalf("stats %+v", st)
	}
	if n, err := in.PendingCount(e.ctx); err != nil || n != 0 {
		t.Fatalf("pending %d %v", n, err)
	}
}
