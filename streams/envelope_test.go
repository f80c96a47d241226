package streams

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"docflow"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	owner := "alice"
	pid := int64(3)
	ts := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	b, err := Encode("run-1", ts, FileIngested{FileID: 9, RunID: "run-1", OwnerID: &owner, PipelineID: &pid, Options: map[string]any{"ocr_language": "deu"}})
	if err != nil {
		t.Fatal(err)
	}
	env, fi, err := Decode[FileIngested](b)
	if err != nil {
		t.Fatal(err)
	}
	if env.V != 1 || env.Type != TypeFileIngested || env.ID != "run-1" || !env.TS.Equal(ts) {
		t.Fatalf("envelope %+v", env)
	}
	if fi.FileID != 9 || *fi.OwnerID != "alice" || *fi.PipelineID != 3 || fi.Options["ocr_language"] != "deu" {
		t.Fatalf("payload %+v", fi)
	}

	ev := Event{ID: "evt_1", Name: docflow.EventDocumentProcessed, Timestamp: ts, Data: map[string]any{"file_id": 9.0}}
	b, err = Encode(ev.ID, ts, ev)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := Decode[Event](b)
	if err != nil || got.Name != ev.Name || got.Data["file_id"] != 9.0 {
		t.Fatalf("event %+v %v", got, err)
	}
}

func TestEnvelopeRejects(t *testing.T) {
	ts := time.Now()
	task, err := Encode("t1", ts, StepTask{RunID: "r", FileID: 1, Position: 2, StepType: "ocr", Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	good := string(task)
	cases := map[string]string{
		"not json":          "{not json",
		"empty":             "",
		"trailing":          good + "{}",
		"unknown field":     strings.Replace(good, `"v":1`, `"v":1,"extra":true`, 1),
		"future version":    strings.Replace(good, `"v":1`, `"v":2`, 1),
		"no id":             strings.Replace(good, `"id":"t1"`, `"id":""`, 1),
		"wrong type":        strings.Replace(good, `"type":"step.task"`, `"type":"file.ingested"`, 1),
		"bad data field":    strings.Replace(good, `"attempt":1`, `"attempt":1,"color":"red"`, 1),
		"wrong field type":  strings.Replace(good, `"file_id":1`, `"file_id":"1"`, 1),
		"failed validation": strings.Replace(good, `"attempt":1`, `"attempt":0`, 1),
		"null data":         `{"v":1,"type":"step.task","id":"x","ts":"2025-01-01T00:00:00Z","data":null}`,
	}
	for name, in := range cases {
		if _, _, err := Decode[StepTask]([]byte(in)); err == nil || !IsPoison(err) {
			t.Errorf("%s: err = %v, want a poison error", name, err)
		}
	}
	if _, err := Encode("", ts, StepTask{}); err == nil {
		t.Error("encode without id")
	}
	if _, err := Encode("x", ts, StepTask{RunID: "r"}); err == nil {
		t.Error("encode of an invalid task")
	}
}

func FuzzDecodeStepTask(f *testing.F) {
	b, _ := Encode("t1", time.Now(), StepTask{RunID: "r", FileID: 1, StepType: "ocr", Attempt: 1})
	f.Add(b)
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		env, task, err := Decode[StepTask](in)
		if err != nil {
			if !IsPoison(err) {
				t.Fatalf("non-poison error %v", err)
			}
			return
		}
		// Whatever decodes re-encodes and decodes to the same envelope
		// and task.
		out, err := Encode(env.ID, env.TS, task)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		env2, again, err := Decode[StepTask](out)
		if err != nil || env2.ID != env.ID || !env2.TS.Equal(env.TS) || !reflect.DeepEqual(again, task) {
			t.Fatalf("round trip of %q: %+v %+v, %v; want %+v %+v", in, env2, again, err, env, task)
		}
	})
}

func TestTopicCatalogue(t *testing.T) {
	tp := DefaultTopics("test_step")
	names := tp.Names()
	want := []string{"docflow.files.ingested", "docflow.steps.ocr", "docflow.steps.test_step", "docflow.retry.60s", "docflow.retry.300s", "docflow.retry.900s", "docflow.dlq", "docflow.events", "docflow.destinations"}
	have := map[string]bool{}
	for _, n := range names {
		if have[n] {
			t.Errorf("duplicate topic %s", n)
		}
		have[n] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("missing topic %s in %v", w, names)
		}
	}
	if got := RetryTiersFor(250*time.Millisecond, 2*time.Second); got[0].Topic() != "docflow.retry.250ms" || got[1].Topic() != "docflow.retry.2s" {
		t.Errorf("tiers %v", got)
	}
	for _, c := range tp.Configs() {
		if c.NumPartitions != DefaultPartitions || c.ReplicationFactor != 1 {
			t.Errorf("config %+v", c)
		}
	}
}
