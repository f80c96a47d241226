package postgres

import (
	"context"
	"testing"

	"docflow/streams"
)

// TestFileEventTriggers: edits of a completed file, share changes and
// deletions write file.updated / file.deleted events the indexer decodes.
func TestFileEventTriggers(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	var id int64
	err := db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, owner_id)
		VALUES ('h1', 'a.pdf', 'x.pdf', 1, 'application/pdf', 'processing', 'alice') RETURNING id`).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	events := func() []streams.Event {
		rows, err := db.Pool.Query(ctx, `SELECT payload FROM outbox WHERE topic=$1 ORDER BY id`, streams.TopicEvents)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []streams.Event
		for rows.Next() {
			var p []byte
			if err := rows.Scan(&p); err != nil {
				t.Fatal(err)
			}
			_, ev, err := streams.Decode[streams.Event](p)
			if err != nil {
				t.Fatalf("decode %s: %v", p, err)
			}
			out = append(out, ev)
		}
		return out
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// A run's own changes and its completion write nothing here.
	exec(`UPDATE files SET document_title='T' WHERE id=$1`, id)
	exec(`UPDATE files SET status='completed' WHERE id=$1`, id)
	if n := len(events()); n != 0 {
		t.Fatalf("%d events during the run", n)
	}
	exec(`UPDATE files SET ai_metadata='{"tags":["x"]}' WHERE id=$1`, id)
	exec(`UPDATE files SET updated_at=now() WHERE id=$1`, id) // not searchable: no event
	exec(`INSERT INTO shares (file_id, owner_id, shared_with_user_id, role) VALUES ($1, 'alice', 'bob', 'viewer')`, id)
	exec(`UPDATE shares SET role='editor' WHERE file_id=$1`, id) // same visibility: no event
	exec(`DELETE FROM files WHERE id=$1`, id)
	evs := events()
	want := []string{"file.updated", "file.updated", "file.deleted"}
	if len(evs) != len(want) {
		t.Fatalf("events %+v, want %v", evs, want)
	}
	for i, ev := range evs {
		if ev.Name != want[i] || ev.Data["file_id"] != float64(id) || ev.OwnerID == nil || *ev.OwnerID != "alice" {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
}
