package streams

import (
	"maps"
	"regexp"
	"slices"
	"testing"
	"time"

	"docflow"
)

var eventIDShape = regexp.MustCompile(`^evt_[0-9a-f]{24}$`)

// TestFileIngestedID: every announcement of one run carries one envelope
// id, whoever builds it (intake at upload, recovery after a restart).
func TestFileIngestedID(t *testing.T) {
	owner := "alice"
	fromIntake, err := FileIngestedMessage(FileIngested{FileID: 9, RunID: "run-1", OwnerID: &owner}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	fromRecovery, err := FileIngestedMessage(FileIngested{FileID: 9, RunID: "run-1", OwnerID: &owner}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := Decode[FileIngested](fromIntake.Payload)
	if err != nil {
		t.Fatal(err)
	}
	b, msg, err := Decode[FileIngested](fromRecovery.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID || a.ID != IngestID("run-1") || msg.RunID != "run-1" {
		t.Fatalf("ids %q and %q, want %q", a.ID, b.ID, IngestID("run-1"))
	}
	if fromIntake.Topic != TopicFilesIngested || fromIntake.Key != "9" {
		t.Fatalf("message %+v", fromIntake)
	}
}

// TestCatalogue checks each kind's topic, key, envelope id and headers.
func TestCatalogue(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	task := StepTask{RunID: "r", FileID: 7, Position: 2, StepType: "ocr", Attempt: 3}

	m, err := StepTaskMessage(task, now)
	if err != nil {
		t.Fatal(err)
	}
	env, got, err := Decode[StepTask](m.Payload)
	if err != nil || env.ID != "r:2:3" || got.RunID != "r" || got.Attempt != 3 || m.Topic != "docflow.steps.ocr" || m.Key != "7" || m.Headers != nil {
		t.Fatalf("task %+v %+v %v", m, env, err)
	}

	next := task
	next.Attempt++
	tier := RetryTiersFor(time.Minute)[0]
	m, err = RetryMessage(next, tier, now.Add(time.Minute), "flaky", now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{HeaderDueAt: "1735787105000", HeaderTargetTopic: "docflow.steps.ocr",
		HeaderReason: "flaky", HeaderStep: "ocr", HeaderAttempt: "3"}
	if m.Topic != "docflow.retry.60s" || !maps.Equal(m.Headers, want) {
		t.Fatalf("retry %+v", m)
	}

	long := string(make([]byte, 5000))
	m, err = TaskDeadLetter(task, long, now)
	if err != nil {
		t.Fatal(err)
	}
	if env, _, err := Decode[StepTask](m.Payload); err != nil || env.ID != "r:2:3" || m.Topic != TopicDLQ {
		t.Fatalf("dead letter %+v %v", m, err)
	}
	if len(m.Headers[HeaderReason]) != maxReason {
		t.Fatalf("reason of %d bytes", len(m.Headers[HeaderReason]))
	}

	f := &docflow.File{ID: 7, OriginalFilename: "a.pdf"}
	seen := map[string]bool{}
	for _, build := range []func() (docflow.OutboxMessage, error){
		func() (docflow.OutboxMessage, error) { return DocumentUploaded(f, now) },
		func() (docflow.OutboxMessage, error) { return DocumentProcessed(f, "r", docflow.StatusCompleted, now) },
		func() (docflow.OutboxMessage, error) { return DocumentFailed(f, "r", "ocr", "boom", now) },
		func() (docflow.OutboxMessage, error) { return FileEvent(EventFileUpdated, 7, nil, now) },
	} {
		m, err := build()
		if err != nil {
			t.Fatal(err)
		}
		env, ev, err := Decode[Event](m.Payload)
		if err != nil || m.Topic != TopicEvents || m.Key != "7" || ev.Data["file_id"] != 7.0 {
			t.Fatalf("event %+v %+v %v", m, ev, err)
		}
		if env.ID != ev.ID || !eventIDShape.MatchString(ev.ID) || seen[ev.ID] {
			t.Fatalf("event id %q (envelope %q)", ev.ID, env.ID)
		}
		seen[ev.ID] = true
	}
}

// TestOneDeadLetterFormat: a task dead-lettered from the outbox and a
// message dead-lettered by the consumer carry the same headers, the
// consumer's with the position it was consumed from.
func TestOneDeadLetterFormat(t *testing.T) {
	task := StepTask{RunID: "r", FileID: 7, Position: 0, StepType: "ocr", Attempt: 2}
	fromOutbox, err := TaskDeadLetter(task, "gave up", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	consumed := Message{Topic: StepTopic("ocr"), Partition: 3, Offset: 41, Key: []byte("7"), Value: fromOutbox.Payload,
		Headers: []Header{{Key: "trace", Value: []byte("t1")}, {Key: HeaderReason, Value: []byte("old")}}}
	fromConsumer := DeadLetter(consumed, TopicDLQ, "gave up", "ocr", 2)
	got := map[string]string{}
	for _, h := range fromConsumer.Headers {
		got[h.Key] = string(h.Value)
	}
	for k, v := range fromOutbox.Headers {
		if got[k] != v {
			t.Errorf("header %s: consumer %q, outbox %q", k, got[k], v)
		}
	}
	keys := slices.Sorted(maps.Keys(got))
	wantKeys := []string{"trace", HeaderAttempt, HeaderOriginalOffset, HeaderOriginalPartition, HeaderOriginalTopic, HeaderReason, HeaderStep}
	if !slices.Equal(keys, wantKeys) || got[HeaderOriginalPartition] != "3" || got[HeaderOriginalOffset] != "41" {
		t.Fatalf("consumer dead letter headers %v", got)
	}
	if len(fromOutbox.Headers) != 4 {
		t.Fatalf("outbox dead letter headers %v", fromOutbox.Headers)
	}
}
