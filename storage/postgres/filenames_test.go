package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"docflow"
	"docflow/storage/postgres"
)

// fileNamesDrift is how many rows file_names and files disagree on.
func fileNamesDrift(t *testing.T, db *postgres.DB) int {
	t.Helper()
	var n int
	err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM (
		(SELECT id, lower(original_filename), status, created_at, owner_id FROM files
		 EXCEPT SELECT id, name_key, status, created_at, owner_id FROM file_names)
		UNION ALL
		(SELECT id, name_key, status, created_at, owner_id FROM file_names
		 EXCEPT SELECT id, lower(original_filename), status, created_at, owner_id FROM files)) d`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// file_names follows every kind of write to files, in single and bulk
// statements.
func TestFileNamesFollowFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	step := func(what, sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if d := fileNamesDrift(t, db); d != 0 {
			t.Fatalf("after %s: %d rows differ", what, d)
		}
	}
	step("one insert", `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type) VALUES ('a', 'Ünïcode Ä.PDF', 'a.pdf', 1, 'application/pdf')`)
	step("bulk insert", `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, owner_id, created_at)
		SELECT 'h' || i, 'Scan_' || i || '.PDF', i || '.pdf', i, 'application/pdf', 'completed', 'ann', TIMESTAMPTZ '2024-01-01' + i * interval '1 hour'
		FROM generate_series(1, 300) AS i`)
	step("rename", `UPDATE files SET original_filename = 'Renamed-' || id || '.PDF' WHERE id % 3 = 0`)
	step("status", `UPDATE files SET status = 'failed' WHERE id % 5 = 0`)
	step("owner", `UPDATE files SET owner_id = NULL WHERE id % 7 = 0`)
	step("created_at", `UPDATE files SET created_at = created_at - interval '1 day' WHERE id % 11 = 0`)
	step("other columns", `UPDATE files SET document_title = 'T', ocr_text = 'x' WHERE id % 2 = 0`)
	step("one delete", `DELETE FROM files WHERE id = (SELECT min(id) FROM files)`)
	var ids []int64
	if err := db.Pool.QueryRow(ctx, `SELECT array_agg(id) FROM files WHERE id % 4 = 0`).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.DeleteFiles(ctx, ids); err != nil {
		t.Fatal(err)
	}
	if d := fileNamesDrift(t, db); d != 0 {
		t.Fatalf("after DeleteFiles: %d rows differ", d)
	}
	var n int
	db.Pool.QueryRow(ctx, `SELECT count(*) FROM file_names`).Scan(&n)
	if n == 0 {
		t.Fatal("file_names is empty")
	}
	step("truncate", `TRUNCATE files CASCADE`)
	db.Pool.QueryRow(ctx, `SELECT count(*) FROM file_names`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d names left after TRUNCATE", n)
	}
}

// A search combined with each filter and each sort on its own returns
// what the same conditions select in SQL: the search reads file_names
// alone or joined with files, depending on what the rest reads.
func TestFindFilesSearchWithEachFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	_, err := db.Pool.Exec(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, owner_id,
			storage_providers, ai_metadata, ocr_quality_score, created_at)
		SELECT 'h' || i, CASE WHEN i % 2 = 0 THEN 'Invoice-' ELSE 'Memo-' END || i || '.pdf', i || '.pdf', 1000 - i,
		       CASE WHEN i % 3 = 0 THEN 'image/png' ELSE 'application/pdf' END,
		       CASE WHEN i % 4 = 0 THEN 'failed' ELSE 'completed' END,
		       CASE WHEN i % 5 = 0 THEN 'bob' WHEN i % 11 = 0 THEN NULL ELSE 'ann' END,
		       CASE WHEN i % 6 = 0 THEN '{s3}'::text[] WHEN i % 9 = 0 THEN '{local,webdav}' ELSE '{}' END,
		       CASE WHEN i % 7 = 0 THEN '{"tags":["paid"]}'::jsonb ELSE '{}' END,
		       CASE WHEN i % 8 = 0 THEN 40 WHEN i % 8 = 1 THEN 95 END,
		       TIMESTAMPTZ '2024-01-01' + i * interval '1 day'
		FROM generate_series(1, 400) AS i`)
	if err != nil {
		t.Fatal(err)
	}
	ann := docflow.Visibility{UserID: "ann"}
	from, to := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 10, 31, 0, 0, 0, 0, time.UTC)
	filters := []struct {
		name  string
		apply func(*docflow.FileFilter)
		where string
	}{
		{"none", func(*docflow.FileFilter) {}, "TRUE"},
		{"status", func(f *docflow.FileFilter) { f.Status = "completed" }, "status = 'completed'"},
		{"dates", func(f *docflow.FileFilter) { f.DateFrom, f.DateTo = &from, &to },
			"created_at >= '2024-03-01' AND created_at < '2024-11-01'"},
		{"visible", func(f *docflow.FileFilter) { f.VisibleTo = &ann }, "owner_id = 'ann'"},
		{"visible with unclaimed", func(f *docflow.FileFilter) { f.VisibleTo = &docflow.Visibility{UserID: "ann", Unclaimed: true} },
			"(owner_id = 'ann' OR owner_id IS NULL)"},
		{"unclaimed only", func(f *docflow.FileFilter) { f.VisibleTo = &docflow.Visibility{Unclaimed: true} }, "owner_id IS NULL"},
		{"nobody", func(f *docflow.FileFilter) { f.VisibleTo = &docflow.Visibility{} }, "FALSE"},
		{"mime", func(f *docflow.FileFilter) { f.MimeType = "image/png" }, "mime_type = 'image/png'"},
		{"provider", func(f *docflow.FileFilter) { f.StorageProviders = []string{"s3"} }, "'s3' = ANY(storage_providers)"},
		{"providers", func(f *docflow.FileFilter) { f.StorageProviders = []string{"s3", "webdav"} },
			"('s3' = ANY(storage_providers) OR 'webdav' = ANY(storage_providers))"},
		{"tags", func(f *docflow.FileFilter) { f.Tags = []string{"paid"} }, "tags @> '{paid}'"},
		{"quality", func(f *docflow.FileFilter) { f.OCRQuality, f.QualityThreshold = "poor", 85 }, "ocr_quality_score < 85"},
		{"owner", func(f *docflow.FileFilter) { f.Owner = "ann" }, "owner_id = 'ann'"},
		{"shared with", func(f *docflow.FileFilter) { f.SharedWith = "ann" }, "id IN (SELECT file_id FROM shares WHERE shared_with_user_id = 'ann')"},
	}
	for _, fl := range filters {
		for _, sortBy := range docflow.FileSortFields {
			for _, search := range []string{"INVOICE-1", "o-2", "ce-3"} {
				filter := docflow.FileFilter{Search: search, SortBy: sortBy, SortOrder: "desc", Page: 1, PerPage: 10}
				fl.apply(&filter)
				got, total, err := s.FindFiles(ctx, filter)
				if err != nil {
					t.Fatalf("%s, sort %s, %q: %v", fl.name, sortBy, search, err)
				}
				listed, ltotal, err := s.ListFiles(ctx, filter, nil)
				if err != nil || ltotal != total || len(listed) != len(got) {
					t.Fatalf("%s, sort %s, %q: ListFiles %d of %d, FindFiles %d of %d, %v", fl.name, sortBy, search, len(listed), ltotal, len(got), total, err)
				}
				brief, btotal, err := s.FindFilesBrief(ctx, filter, nil)
				if err != nil || btotal != total || len(brief) != len(got) {
					t.Fatalf("%s, sort %s, %q: FindFilesBrief %d of %d, FindFiles %d of %d, %v", fl.name, sortBy, search, len(brief), btotal, len(got), total, err)
				}
				for i := range brief {
					if brief[i].ID != got[i].ID {
						t.Fatalf("%s, sort %s, %q: FindFilesBrief's row %d is file %d, FindFiles' %d", fl.name, sortBy, search, i, brief[i].ID, got[i].ID)
					}
				}
				var want []int64
				var wantTotal int
				q := fmt.Sprintf(`SELECT coalesce(array_agg(id ORDER BY %s DESC, id DESC), '{}'), count(*) FROM files
					WHERE lower(original_filename) LIKE '%%' || lower($1) || '%%' AND %s`, sortBy, fl.where)
				if err := db.Pool.QueryRow(ctx, q, search).Scan(&want, &wantTotal); err != nil {
					t.Fatal(err)
				}
				want = want[:min(10, len(want))]
				var ids, lids []int64
				for i := range got {
					ids, lids = append(ids, got[i].ID), append(lids, listed[i].ID)
				}
				if total != wantTotal || !slices.Equal(ids, want) || !slices.Equal(lids, want) {
					t.Fatalf("%s, sort %s, %q: %v of %d (listed %v), want %v of %d", fl.name, sortBy, search, ids, total, lids, want, wantTotal)
				}
			}
		}
	}
}

// ListFiles appends to the array it is given, and past the last page
// leaves it as it was.
func TestListFilesAppends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type)
		SELECT 'h' || i, 'a-' || i || '.pdf', i || '.pdf', i, 'application/pdf' FROM generate_series(1, 30) AS i`); err != nil {
		t.Fatal(err)
	}
	dst := make([]docflow.FileListing, 1, 40)
	dst[0].ID = -1
	got, total, err := s.ListFiles(ctx, docflow.FileFilter{SortBy: "id", SortOrder: "asc", Page: 2, PerPage: 25}, dst)
	if err != nil || total != 30 || len(got) != 6 || got[0].ID != -1 || got[1].ID == 0 || &got[0] != &dst[0] {
		t.Fatalf("%d listed (total %d), first %d, %v", len(got), total, got[0].ID, err)
	}
	got, total, err = s.ListFiles(ctx, docflow.FileFilter{Page: 3, PerPage: 25}, dst[:1])
	if err != nil || total != 30 || len(got) != 1 || got[0].ID != -1 {
		t.Fatalf("past the end: %d listed (total %d), %v", len(got), total, err)
	}
	got, _, err = s.ListFiles(ctx, docflow.FileFilter{Page: 3, PerPage: 25}, nil)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("past the end with no array: %v, %v", got, err)
	}
}
