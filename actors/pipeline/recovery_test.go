package pipeline

import (
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/intake"
	"docflow/storage/postgres"
	"docflow/streams"
)

// TestRecoveryAnnouncesARunAsIntakeDid: a run that intake announced and
// recovery announces again (its file.ingested was published, nobody routed
// it) carries one envelope id, so the copies are told apart from new runs.
func TestRecoveryAnnouncesARunAsIntakeDid(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.NoRouter = true })
	cipher, err := postgres.NewCipher(strings.Repeat("k", 32))
	if err != nil {
		t.Fatal(err)
	}
	settings, err := postgres.NewSettingsStore(e.ctx, e.DB, cipher, func(string) string { return "" }, e.log)
	if err != nil {
		t.Fatal(err)
	}
	in, err := intake.New(intake.Config{Files: postgres.NewFileStore(e.DB), Blobs: e.Blobs, Settings: settings, Log: e.log,
		LoadPerCPU: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	res, err := in.Ingest(e.ctx, docflow.Upload{Filename: "a.txt", Body: strings.NewReader("recovered"), Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Published by the relay, so recovery does not leave the run to it.
	deadline := time.Now().Add(time.Minute)
	for {
		var unsent int
		if err := e.DB.Pool.QueryRow(e.ctx, `SELECT count(*) FROM outbox WHERE sent_at IS NULL`).Scan(&unsent); err != nil {
			t.Fatal(err)
		}
		if unsent == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d outbox rows unsent", unsent)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := e.Engine.Recover(e.ctx); err != nil {
		t.Fatal(err)
	}
	rows := e.outbox(streams.TopicFilesIngested)
	if len(rows) != 2 {
		t.Fatalf("%d file.ingested rows, want intake's and recovery's", len(rows))
	}
	var ids []string
	for _, r := range rows {
		env, msg, err := streams.Decode[streams.FileIngested]([]byte(r["payload"]))
		if err != nil || msg.RunID != res.TaskID {
			t.Fatalf("file.ingested %+v %v", msg, err)
		}
		ids = append(ids, env.ID)
	}
	if ids[0] != ids[1] || ids[0] != streams.IngestID(res.TaskID) {
		t.Fatalf("intake announced %q, recovery %q", ids[0], ids[1])
	}
}
