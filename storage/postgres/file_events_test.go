package postgres

import (
	"context"
	"reflect"
	"regexp"
	"testing"
	"time"

	"docflow"
	"docflow/streams"
)

// TestFileEventTriggers: edits of a completed file, share changes and
// deletions write file.updated / file.deleted events the indexer decodes.
func TestFileEventTriggers(t *testing.T) {
	t.Parallel()
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

// TestFileEventTriggerEnvelope: the message the database trigger writes is
// the one streams.FileEvent builds for the same change (topic, key,
// envelope, event, id shape), read with the decoder the indexer uses.
func TestFileEventTriggerEnvelope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	var id int64
	err := db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, owner_id)
		VALUES ('h1', 'a.pdf', 'x.pdf', 1, 'application/pdf', 'completed', 'alice') RETURNING id`).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if _, err := db.Pool.Exec(ctx, `DELETE FROM files WHERE id=$1`, id); err != nil {
		t.Fatal(err)
	}
	var got docflow.OutboxMessage
	var avail time.Time
	if err := db.Pool.QueryRow(ctx, `SELECT topic, key, payload, headers, available_at FROM outbox ORDER BY id DESC LIMIT 1`).
		Scan(&got.Topic, &got.Key, &got.Payload, &got.Headers, &avail); err != nil {
		t.Fatal(err)
	}
	owner := "alice"
	want, err := streams.FileEvent(streams.EventFileDeleted, id, &owner, before)
	if err != nil {
		t.Fatal(err)
	}
	if got.Topic != want.Topic || got.Key != want.Key || len(got.Headers) != len(want.Headers) {
		t.Fatalf("trigger wrote %s/%s %v, streams builds %s/%s %v", got.Topic, got.Key, got.Headers, want.Topic, want.Key, want.Headers)
	}
	genv, gev, err := streams.Decode[streams.Event](got.Payload)
	if err != nil {
		t.Fatalf("decode the trigger's %s: %v", got.Payload, err)
	}
	wenv, wev, err := streams.Decode[streams.Event](want.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if genv.V != wenv.V || genv.Type != wenv.Type || genv.ID != gev.ID {
		t.Fatalf("envelope %+v, streams builds %+v", genv, wenv)
	}
	idShape := regexp.MustCompile(`^evt_[0-9a-f]{24}$`)
	if !idShape.MatchString(gev.ID) || !idShape.MatchString(wev.ID) {
		t.Fatalf("event ids %q (trigger) and %q (streams) differ in shape", gev.ID, wev.ID)
	}
	if gev.Name != wev.Name || *gev.OwnerID != *wev.OwnerID || !reflect.DeepEqual(gev.Data, wev.Data) {
		t.Fatalf("event %+v, streams builds %+v", gev, wev)
	}
	if d := gev.Timestamp.Sub(before); d < -time.Second || d > time.Minute || !genv.TS.Equal(gev.Timestamp) {
		t.Fatalf("trigger's times %v / %v, change at %v", genv.TS, gev.Timestamp, before)
	}
}
