package postgres_test

import (
	"context"
	"testing"
	"time"

	"docflow"
	"docflow/streams"
)

// A watch-folder file handed with the record is remembered in the same
// transaction on every path (batched, transactional, duplicate) and not at
// all when the record fails; a duplicate gets neither the run nor the
// messages it was handed.
func TestIngestRecordsWatchSeenAndDropsADuplicatesRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := func(f *docflow.File, name, run string) docflow.IngestRecord {
		t.Helper()
		id, err := s.NewFileID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return docflow.IngestRecord{ID: id, File: f, Dedup: true, RunID: run,
			Messages: []docflow.OutboxMessage{{Topic: streams.TopicFilesIngested, Key: streams.FileKey(id), Payload: []byte("x")}},
			Seen:     &docflow.WatchSeen{Folder: "/in", Name: name, Size: 1, MTime: mtime}}
	}
	seenFile := func(name string) (int64, bool) {
		t.Helper()
		var id *int64
		err := db.Pool.QueryRow(ctx, `SELECT file_id FROM watch_folder_seen WHERE folder = '/in' AND name = $1`, name).Scan(&id)
		if err != nil || id == nil {
			return 0, false
		}
		return *id, true
	}
	count := func(q string) int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// New content, no owner: the batched path.
	a := newFile("a", "")
	if _, err := s.Ingest(ctx, rec(a, "a.pdf", "run-a")); err != nil {
		t.Fatal(err)
	}
	if id, ok := seenFile("a.pdf"); !ok || id != a.ID || a.TaskID != "run-a" {
		t.Fatalf("a.pdf seen as file %d (%v), want %d; task %q", id, ok, a.ID, a.TaskID)
	}
	// An owner with a daily limit: the transactional path.
	b := newFile("b", "bob")
	r := rec(b, "b.pdf", "run-b")
	r.DailyLimit = 5
	if _, err := s.Ingest(ctx, r); err != nil {
		t.Fatal(err)
	}
	if id, ok := seenFile("b.pdf"); !ok || id != b.ID || b.TaskID != "run-b" {
		t.Fatalf("b.pdf seen as file %d (%v), want %d; task %q", id, ok, b.ID, b.TaskID)
	}
	runs, outbox := count(`SELECT count(*) FROM runs`), count(`SELECT count(*) FROM outbox`)
	if runs != 2 || outbox != 2 {
		t.Fatalf("runs %d outbox %d", runs, outbox)
	}
	// Same content as a: recorded as a duplicate, remembered, no run, no
	// message.
	d := newFile("a", "")
	orig, err := s.Ingest(ctx, rec(d, "d.pdf", "run-d"))
	if err != nil || orig == nil || orig.ID != a.ID || d.Status != docflow.StatusDuplicate || d.TaskID != "" {
		t.Fatalf("duplicate %+v of %+v: %v", d, orig, err)
	}
	if id, ok := seenFile("d.pdf"); !ok || id != d.ID {
		t.Fatalf("d.pdf seen as file %d (%v), want %d", id, ok, d.ID)
	}
	if n, m := count(`SELECT count(*) FROM runs`), count(`SELECT count(*) FROM outbox`); n != runs || m != outbox {
		t.Fatalf("a duplicate wrote runs (%d) or messages (%d)", n-runs, m-outbox)
	}
	// A record that fails leaves no memory of the file.
	bad := int64(999)
	e := newFile("e", "")
	e.PipelineID = &bad
	if _, err := s.Ingest(ctx, rec(e, "e.pdf", "run-e")); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("unknown pipeline: %v", err)
	}
	if _, ok := seenFile("e.pdf"); ok {
		t.Fatal("a failed record was remembered as seen")
	}
}
