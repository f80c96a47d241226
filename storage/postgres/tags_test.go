package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// fileTags reads a file's tags column.
func fileTags(t *testing.T, db *DB, id int64) []string {
	t.Helper()
	var tags []string
	if err := db.Pool.QueryRow(context.Background(), `SELECT tags FROM files WHERE id=$1`, id).Scan(&tags); err != nil {
		t.Fatal(err)
	}
	return tags
}

// The tags column is the AI metadata's tags after every kind of write:
// intake with uploaded metadata (both intake paths), a metadata edit, a
// step's result and plain SQL; a write to the column alone is undone.
func TestTagsFollowTheMetadata(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	s := NewFileStore(db)
	ingest := func(hash string, owner *string, meta map[string]any) int64 {
		t.Helper()
		f := &docflow.File{FileHash: hash, OriginalFilename: hash + ".pdf", StoredFilename: hash + ".pdf", FileSize: 1,
			MimeType: "application/pdf", Source: docflow.ChannelUpload, OriginalBlob: hash, OwnerID: owner, AIMetadata: meta}
		rec := docflow.IngestRecord{File: f, Dedup: true}
		if owner != nil {
			rec.DailyLimit = 10 // the transactional path
		}
		if _, err := s.Ingest(ctx, rec); err != nil {
			t.Fatal(err)
		}
		return f.ID
	}
	owner := "ann"
	quick := ingest("quick", nil, map[string]any{"tags": []any{"tax", "2024"}, "title": "x"})
	counted := ingest("counted", &owner, map[string]any{"tags": []string{"paid"}})
	plain := ingest("plain", nil, nil)
	for id, want := range map[int64][]string{quick: {"tax", "2024"}, counted: {"paid"}, plain: {}} {
		if got := fileTags(t, db, id); !slices.Equal(got, want) {
			t.Errorf("intake of file %d: tags %v, want %v", id, got, want)
		}
	}

	if _, err := s.UpdateFile(ctx, plain, func(f *docflow.File) error {
		f.AIMetadata["tags"] = []any{"edited"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := fileTags(t, db, plain); !slices.Equal(got, []string{"edited"}) {
		t.Errorf("after UpdateFile: %v", got)
	}

	for _, c := range []struct{ sql, want string }{
		{`UPDATE files SET ai_metadata = '{"tags": ["x", 1, null, "y"]}' WHERE id=$1`, "x,y"},
		{`UPDATE files SET tags = '{forged}' WHERE id=$1`, "x,y"},
		{`UPDATE files SET ai_metadata = '{"tags": "not a list"}' WHERE id=$1`, ""},
		{`UPDATE files SET ai_metadata = '{}', tags = '{forged}' WHERE id=$1`, ""},
	} {
		if _, err := db.Pool.Exec(ctx, c.sql, counted); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(fileTags(t, db, counted), ","); got != c.want {
			t.Errorf("%s: tags %q, want %q", c.sql, got, c.want)
		}
	}

	// A step that writes the AI metadata (extract_metadata, classify).
	runs := NewRunStore(db)
	if _, err := db.Pool.Exec(ctx, `UPDATE files SET task_id='run-tags' WHERE id=$1`, quick); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO runs (id, file_id) VALUES ('run-tags', $1)`, quick); err != nil {
		t.Fatal(err)
	}
	if _, err := runs.StartRun(ctx, "run-tags", quick, nil, []*docflow.PipelineStep{{StepType: "test", Enabled: true}}, "routed"); err != nil {
		t.Fatal(err)
	}
	claim, err := runs.ClaimStep(ctx, docflow.StepClaimRequest{RunID: "run-tags", Position: 0, Attempt: 1, Worker: "w", TTL: time.Minute})
	if err != nil || claim.Outcome != docflow.StepClaimOK {
		t.Fatalf("claim %+v %v", claim, err)
	}
	after := *claim.File
	after.AIMetadata = map[string]any{"tags": []any{"from-step"}, "title": "x"}
	w, err := runs.CompleteStep(ctx, docflow.StepRecord{RunID: "run-tags", Position: 0, Attempt: 1, Worker: "w", FileID: quick,
		StepType: "test", Status: docflow.StepSucceeded, Before: claim.File, After: &after, FinishRun: docflow.RunCompleted})
	if err != nil || !w.Recorded {
		t.Fatalf("complete %+v %v", w, err)
	}
	if got := fileTags(t, db, quick); !slices.Equal(got, []string{"from-step"}) {
		t.Errorf("after a step: %v", got)
	}

	// The filter matches every tag asked for.
	for _, c := range []struct {
		tags []string
		want []int64
	}{{[]string{"from-step"}, []int64{quick}}, {[]string{"edited"}, []int64{plain}}, {[]string{"from-step", "edited"}, nil}} {
		files, total, err := s.FindFiles(ctx, docflow.FileFilter{Tags: c.tags, SortBy: "id", SortOrder: "asc", Page: 1, PerPage: 25})
		var ids []int64
		for _, f := range files {
			ids = append(ids, f.ID)
		}
		if err != nil || total != len(c.want) || !slices.Equal(ids, c.want) {
			t.Errorf("tags %v: %v (total %d), want %v: %v", c.tags, ids, total, c.want, err)
		}
	}
}

// The tags filter is one the GIN index on files.tags answers: with
// sequential scans priced out, the plan of the listing's condition reads
// the index.
func TestTagsFilterUsesItsIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, ai_metadata)
		SELECT 'h' || i, i || '.pdf', i || '.pdf', 1, 'application/pdf',
		       CASE WHEN i % 100 = 0 THEN '{"tags": ["rare"]}' ELSE '{"tags": ["common"]}' END::jsonb
		FROM generate_series(1, 3000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE files`); err != nil {
		t.Fatal(err)
	}
	where, args := fileWhere(docflow.FileFilter{Tags: []string{"rare"}})
	var plan []string
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `EXPLAIN SELECT f.id FROM files f`+where, args...)
		if err != nil {
			return err
		}
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(plan, "\n"); !strings.Contains(text, "files_tags") {
		t.Fatalf("the tags filter %q does not read files_tags:\n%s", where, text)
	}
}

// Migration 0300 resyncs rows written before it and drops the hash index
// that the unique index of originals covers.
func TestTagsMigrationResyncsOldRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	var id int64
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		// As intake wrote them before: metadata tags, an empty column.
		if _, err := tx.Exec(ctx, `ALTER TABLE files DISABLE TRIGGER files_sync_tags_insert`); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, ai_metadata)
			VALUES ('old', 'old.pdf', 'old.pdf', 1, 'application/pdf', '{"tags": ["legacy"]}') RETURNING id`).Scan(&id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `ALTER TABLE files ENABLE TRIGGER files_sync_tags_insert`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := fileTags(t, db, id); len(got) != 0 {
		t.Fatalf("set-up: tags %v", got)
	}
	sql, err := migrationFS.ReadFile("migrations/0300_file_tags.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, string(sql)); err != nil {
		t.Fatalf("migration 0300 again: %v", err)
	}
	if got := fileTags(t, db, id); !slices.Equal(got, []string{"legacy"}) {
		t.Fatalf("after the migration: tags %v", got)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = 'files' AND indexname = 'files_hash'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("files_hash still there (%d) %v", n, err)
	}
}
