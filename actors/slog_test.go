package actors

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestSlogHandler(t *testing.T) {
	var buf bytes.Buffer
	log := zerolog.New(&buf).Level(zerolog.InfoLevel)
	l := slog.New(NewSlogHandler(log))

	l.Debug("hidden")
	l.With("pid", "step/1").WithGroup("job").Error("crashed", "id", "j1", "n", 3, "err", errors.New("boom"),
		"took", time.Second, slog.Group("sub", "ok", true), "stack", []byte("goroutine 1\n"))
	l.Warn("plain")

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("got %d lines: %s", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal(lines[0], &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"level": "error", "message": "crashed", "component": "actor-engine", "pid": "step/1",
		"job.id": "j1", "job.n": 3.0, "job.err": "boom", "job.sub.ok": true, "job.stack": "goroutine 1",
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v (record %s)", k, rec[k], v, lines[0])
		}
	}
	if _, ok := rec["job.took"]; !ok {
		t.Errorf("duration missing: %s", lines[0])
	}
	if !bytes.Contains(lines[1], []byte(`"level":"warn"`)) {
		t.Errorf("warn line: %s", lines[1])
	}
}
