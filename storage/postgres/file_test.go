package postgres_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/storage/postgres"
	"docflow/streams"
)

func newFile(hash, owner string) *docflow.File {
	f := &docflow.File{FileHash: hash, OriginalFilename: "f.pdf", StoredFilename: hash + ".pdf", FileSize: 1,
		MimeType: "application/pdf", Source: docflow.ChannelUpload, OriginalBlob: hash}
	if owner != "" {
		f.OwnerID = &owner
	}
	return f
}

// openFiles returns a FileStore on a fresh migrated database, dropped
// when the test ends.
func openFiles(t *testing.T) (*postgres.DB, *postgres.FileStore) {
	t.Helper()
	db, cleanup, err := postgres.OpenTestDB(context.Background(), "files")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return db, postgres.NewFileStore(db)
}

func TestIngestRacesAndDailyLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)

	// Ten identical files at once: exactly one original.
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Ingest(ctx, docflow.IngestRecord{File: newFile("samehash", ""), Dedup: true})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var orig, dup int
	db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status <> 'duplicate'), count(*) FILTER (WHERE status = 'duplicate') FROM files`).Scan(&orig, &dup)
	if orig != 1 || dup != 9 {
		t.Fatalf("%d originals, %d duplicates", orig, dup)
	}

	// Daily limit 3 under concurrency: exactly 3 recorded.
	wg = sync.WaitGroup{}
	var mu sync.Mutex
	limited := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Ingest(ctx, docflow.IngestRecord{File: newFile("h"+string(rune('a'+i)), "alice"), Dedup: true, DailyLimit: 3})
			if docflow.ErrorCode(err) == docflow.ERATELIMIT {
				mu.Lock()
				limited++
				mu.Unlock()
			} else if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var n int
	db.Pool.QueryRow(ctx, `SELECT count(*) FROM files WHERE owner_id='alice'`).Scan(&n)
	if n != 3 || limited != 5 {
		t.Fatalf("%d recorded, %d limited", n, limited)
	}
	p, err := s.UploadPolicy(ctx, "alice")
	if err != nil || p.UsedToday != 3 || p.Blocked {
		t.Fatalf("policy %+v %v", p, err)
	}

	// Deleting the original keeps the blob while a duplicate uses it.
	first, err := s.FindFileByHash(ctx, "samehash")
	if err != nil {
		t.Fatal(err)
	}
	orphans, err := s.DeleteFile(ctx, first.ID)
	if err != nil || len(orphans) != 0 {
		t.Fatalf("orphans %v %v", orphans, err)
	}
	files, _, err := s.FindFiles(ctx, docflow.FileFilter{Search: "f.pdf", PerPage: 200})
	if err != nil || len(files) != 12 {
		t.Fatalf("%d files %v", len(files), err)
	}
	ids := make([]int64, len(files))
	for i, f := range files {
		ids[i] = f.ID
	}
	deleted, orphans, err := s.DeleteFiles(ctx, ids)
	if err != nil || len(deleted) != 12 || len(orphans) != 4 {
		t.Fatalf("deleted %d orphans %v err %v", len(deleted), orphans, err)
	}
}

// A metadata sidecar is the file's blob too: deleting the file gives it
// back as an orphan unless another record names it.
func TestDeleteReturnsSidecarBlobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	var ids []int64
	for _, h := range []string{"s1", "s2", "s3"} {
		if _, err := s.Ingest(ctx, docflow.IngestRecord{File: newFile(h, ""), Dedup: true}); err != nil {
			t.Fatal(err)
		}
		f, err := s.FindFileByHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.ID)
	}
	// s1 and s2 share a sidecar; s3 has its own.
	if _, err := db.Pool.Exec(ctx, `UPDATE files SET ai_metadata = jsonb_build_object('metadata_sidecar',
		CASE WHEN id = $3 THEN 'side-b' ELSE 'side-a' END) WHERE id = ANY($1) OR id = $2`, ids[:2], ids[2], ids[2]); err != nil {
		t.Fatal(err)
	}
	if used, err := s.BlobInUse(ctx, "side-a"); err != nil || !used {
		t.Fatalf("side-a in use: %v %v", used, err)
	}
	_, orphans, err := s.DeleteFiles(ctx, []int64{ids[0], ids[2]})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(orphans)
	if !slices.Equal(orphans, []string{"s1", "s3", "side-b"}) {
		t.Fatalf("orphans %v, want s1, s3 and side-b (side-a is still s2's)", orphans)
	}
	_, orphans, err = s.DeleteFiles(ctx, []int64{ids[1]})
	slices.Sort(orphans)
	if err != nil || !slices.Equal(orphans, []string{"s2", "side-a"}) {
		t.Fatalf("orphans %v %v", orphans, err)
	}
}

func TestFindFilesDeepPagesMatchOffset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	// 7,000 rows with repeated timestamps and names so ties need the id.
	_, err := db.Pool.Exec(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, created_at)
		SELECT md5(i::text), 'doc-' || (i % 700) || '.pdf', i || '.pdf', i % 97, 'application/pdf',
		       CASE WHEN i % 4 = 0 THEN 'failed' ELSE 'completed' END, TIMESTAMPTZ '2024-01-01' + ((i / 3) * interval '1 minute')
		FROM generate_series(1, 7000) AS i`)
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string]string{"created_at": "created_at", "id": "id", "original_filename": "original_filename", "file_size": "file_size"}
	for _, sortBy := range []string{"created_at", "id", "original_filename", "file_size"} {
		for _, order := range []string{"asc", "desc"} {
			for _, status := range []string{"", "completed"} {
				for _, page := range []int{1, 101, 150, 199, 280} {
					f := docflow.FileFilter{SortBy: sortBy, SortOrder: order, Status: status, Page: page, PerPage: 25}
					got, total, err := s.FindFiles(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					where := ""
					if status != "" {
						where = "WHERE status = '" + status + "'"
					}
					rows, err := db.Pool.Query(ctx, `SELECT id FROM files `+where+` ORDER BY `+cols[sortBy]+` `+order+`, id `+order+` LIMIT 25 OFFSET $1`, (page-1)*25)
					if err != nil {
						t.Fatal(err)
					}
					var want []int64
					for rows.Next() {
						var id int64
						rows.Scan(&id)
						want = append(want, id)
					}
					rows.Close()
					if len(got) != len(want) {
						t.Fatalf("%s %s %q page %d: %d rows, want %d (total %d)", sortBy, order, status, page, len(got), len(want), total)
					}
					for i := range want {
						if got[i].ID != want[i] {
							t.Fatalf("%s %s %q page %d row %d: id %d, want %d", sortBy, order, status, page, i, got[i].ID, want[i])
						}
					}
				}
			}
		}
	}
}

// The batched path for new content must be one transaction: a statement
// that fails after the file row leaves no row, run, count or message.
func TestIngestNewIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	// withRun is the record of f with run and a message, under an id drawn
	// beforehand.
	withRun := func(f *docflow.File, run string) docflow.IngestRecord {
		id, err := s.NewFileID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return docflow.IngestRecord{ID: id, File: f, Dedup: true, RunID: run,
			Messages: []docflow.OutboxMessage{{Topic: streams.TopicFilesIngested, Key: streams.FileKey(id), Payload: []byte("x")}}}
	}
	f := newFile("h1", "bob")
	if _, err := s.Ingest(ctx, withRun(f, "run-1")); err != nil {
		t.Fatal(err)
	}
	if f.ID == 0 || f.TaskID != "run-1" || f.Status != docflow.StatusPending || f.CreatedAt.IsZero() {
		t.Fatalf("file %+v", f)
	}
	// The run id is taken: the run insert fails after the file row went in.
	g := newFile("h2", "bob")
	if _, err := s.Ingest(ctx, withRun(g, "run-1")); err == nil {
		t.Fatal("duplicate run id accepted")
	}
	if g.ID != 0 {
		t.Fatalf("failed ingest left id %d", g.ID)
	}
	var files, runs, outbox, count int
	db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM runs), (SELECT count(*) FROM outbox),
		(SELECT COALESCE(sum(count), 0) FROM upload_counters WHERE owner_id = 'bob')`).Scan(&files, &runs, &outbox, &count)
	if files != 1 || runs != 1 || outbox != 1 || count != 1 {
		t.Fatalf("files %d runs %d outbox %d count %d", files, runs, outbox, count)
	}
	// Same content again: the duplicate is found through the original.
	d := newFile("h1", "bob")
	dup, err := s.Ingest(ctx, withRun(d, "run-2"))
	if err != nil || dup == nil || dup.ID != f.ID || d.Status != docflow.StatusDuplicate || d.TaskID != "" {
		t.Fatalf("duplicate %+v of %+v: %v", d, dup, err)
	}
	// An unknown pipeline is ENOTFOUND and records nothing.
	bad := int64(999)
	p := newFile("h3", "")
	p.PipelineID = &bad
	if _, err := s.Ingest(ctx, withRun(p, "run-3")); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("unknown pipeline: %v", err)
	}
	db.Pool.QueryRow(ctx, `SELECT count(*) FROM files WHERE filehash = 'h3'`).Scan(&files)
	if files != 0 {
		t.Fatal("file recorded with an unknown pipeline")
	}
}

// A new upload's transaction keeps its NOTIFY quiet; the relay must still be
// woken once it committed.
func TestIngestNewWakesTheRelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+postgres.OutboxChannel); err != nil {
		t.Fatal(err)
	}
	f := newFile("wake", "")
	id, err := s.NewFileID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Ingest(ctx, docflow.IngestRecord{ID: id, File: f, Dedup: true, RunID: "run-wake",
		Messages: []docflow.OutboxMessage{{Topic: streams.TopicFilesIngested, Key: streams.FileKey(id), Payload: []byte("x")}}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := conn.Conn().WaitForNotification(wctx); err != nil {
		t.Fatalf("no outbox notification: %v", err)
	}
	// Exactly one: the transaction's own trigger stayed quiet.
	qctx, qcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer qcancel()
	if n, err := conn.Conn().WaitForNotification(qctx); err == nil {
		t.Fatalf("second notification %+v: the insert trigger was not quiet", n)
	}
	var quiet string
	if err := db.Pool.QueryRow(ctx, `SELECT COALESCE(current_setting('docflow.outbox_quiet', true), '')`).Scan(&quiet); err != nil || quiet == "on" {
		t.Fatalf("quiet setting leaked out of the transaction: %q %v", quiet, err)
	}
}

// A selective filter is answered with its exact total from the same scan,
// past-the-end pages included, and sees a new match at once.
func TestFindFilesSelectiveFilterTotals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	_, err := db.Pool.Exec(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, created_at)
		SELECT md5(i::text), 'note-' || i || '.pdf', i || '.pdf', i, 'application/pdf', 'completed', TIMESTAMPTZ '2024-01-01' + i * interval '1 minute'
		FROM generate_series(1, 300) AS i`)
	if err != nil {
		t.Fatal(err)
	}
	filter := docflow.FileFilter{Search: "note-1", Status: "completed", PerPage: 25, Page: 1}
	// note-1, note-10..19, note-100..199: 111 matches.
	for _, page := range []int{1, 5, 6} {
		filter.Page = page
		files, total, err := s.FindFiles(ctx, filter)
		want := min(25, max(0, 111-(page-1)*25))
		if err != nil || total != 111 || len(files) != want {
			t.Fatalf("page %d: %d files, total %d, %v", page, len(files), total, err)
		}
	}
	filter.Page = 1
	files, _, _ := s.FindFiles(ctx, filter)
	if files[0].OriginalFilename != "note-199.pdf" {
		t.Fatalf("first %s", files[0].OriginalFilename)
	}
	if _, err := s.Ingest(ctx, docflow.IngestRecord{File: &docflow.File{FileHash: "n", OriginalFilename: "Note-1000.pdf",
		StoredFilename: "n.pdf", MimeType: "application/pdf", Source: docflow.ChannelUpload}}); err != nil {
		t.Fatal(err)
	}
	db.Pool.Exec(ctx, `UPDATE files SET status = 'completed'`)
	if files, total, err := s.FindFiles(ctx, filter); err != nil || total != 112 || files[0].OriginalFilename != "Note-1000.pdf" {
		t.Fatalf("after a new match: total %d, %v", total, err)
	}
}

// A search combined with other filters (ownership included) keeps every
// condition, whichever way the rows are read.
func TestFindFilesSearchWithOtherFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	_, err := db.Pool.Exec(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, owner_id, created_at)
		SELECT md5(i::text), 'Report_' || i || '.pdf', i || '.pdf', i, 'application/pdf',
		       CASE WHEN i % 2 = 0 THEN 'completed' ELSE 'failed' END, CASE WHEN i % 3 = 0 THEN 'ann' ELSE 'bob' END,
		       TIMESTAMPTZ '2024-01-01' + i * interval '1 day'
		FROM generate_series(1, 400) AS i`)
	if err != nil {
		t.Fatal(err)
	}
	ann := docflow.Visibility{UserID: "ann"}
	from := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	filter := docflow.FileFilter{Search: "report_1", Status: "completed", DateFrom: &from, VisibleTo: &ann, PerPage: 200, Page: 1}
	files, total, err := s.FindFiles(ctx, filter)
	if err != nil {
		t.Fatal(err)
	}
	var want int
	db.Pool.QueryRow(ctx, `SELECT count(*) FROM files WHERE original_filename ILIKE 'report\_1%' AND status = 'completed'
		AND owner_id = 'ann' AND created_at >= '2024-03-01'`).Scan(&want)
	if want == 0 || total != want || len(files) != want {
		t.Fatalf("%d files, total %d, want %d", len(files), total, want)
	}
	for _, f := range files {
		if f.Status != "completed" || *f.OwnerID != "ann" || f.CreatedAt.Before(from) || !strings.HasPrefix(f.OriginalFilename, "Report_1") {
			t.Fatalf("%+v does not match", f)
		}
	}
}

// Every filter combines with a search: the rows the search selects carry
// each column a filter or a sort reads.
func TestFindFilesSearchWithEveryFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	_, err := db.Pool.Exec(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, owner_id,
			storage_providers, ai_metadata, ocr_quality_score, created_at)
		VALUES ('h1', 'Acme-Invoice.pdf', 'h1.pdf', 10, 'application/pdf', 'completed', 'ann', '{local,s3}', '{"tags":["paid"]}', 50, '2024-05-01')`)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	db.Pool.QueryRow(ctx, `SELECT id FROM files`).Scan(&id)
	ann := docflow.Visibility{UserID: "ann"}
	from, to := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC)
	for _, sort := range []string{"id", "original_filename", "file_size", "mime_type", "created_at"} {
		filter := docflow.FileFilter{VisibleTo: &ann, IDs: []int64{id}, Search: "invoice", MimeType: "application/pdf",
			Status: "completed", DateFrom: &from, DateTo: &to, StorageProviders: []string{"s3"}, Tags: []string{"paid"},
			OCRQuality: "poor", QualityThreshold: 85, SortBy: sort, SortOrder: "asc", Page: 1, PerPage: 25,
			WithProcessingStatus: true}
		files, total, err := s.FindFiles(ctx, filter)
		if err != nil || total != 1 || len(files) != 1 || files[0].ID != id {
			t.Fatalf("sort %s: %d files, total %d, %v", sort, len(files), total, err)
		}
		f := files[0]
		if f.OriginalFilename != "Acme-Invoice.pdf" || f.FileSize != 10 || f.MimeType != "application/pdf" || f.Status != "completed" ||
			*f.OwnerID != "ann" || f.CreatedAt.IsZero() || f.FileHash != "h1" || f.Processing == nil || f.Processing.Status != "completed" {
			t.Fatalf("sort %s: %+v", sort, f)
		}
		listed, total, err := s.ListFiles(ctx, filter, nil)
		if err != nil || total != 1 || len(listed) != 1 {
			t.Fatalf("sort %s: listed %d files, total %d, %v", sort, len(listed), total, err)
		}
		want := docflow.FileListing{ID: id, OriginalFilename: f.OriginalFilename, FileSize: f.FileSize, MimeType: f.MimeType,
			CreatedAt: f.CreatedAt, OwnerID: f.OwnerID, Processing: *f.Processing}
		if l := listed[0]; l.ID != want.ID || l.OriginalFilename != want.OriginalFilename || l.FileSize != want.FileSize ||
			l.MimeType != want.MimeType || !l.CreatedAt.Equal(want.CreatedAt) || *l.OwnerID != *want.OwnerID || l.Processing != want.Processing {
			t.Fatalf("sort %s: listed %+v, want %+v", sort, l, want)
		}
		brief, total, err := s.FindFilesBrief(ctx, filter, nil)
		if err != nil || total != 1 || len(brief) != 1 {
			t.Fatalf("sort %s: brief %d files, total %d, %v", sort, len(brief), total, err)
		}
		full := *f
		full.FileHash, full.StoredFilename, full.Source, full.OriginalBlob, full.ProcessedBlob = "", "", "", "", ""
		full.AIMetadata, full.StorageProviders, full.Processing = nil, nil, nil
		if b := brief[0]; !reflect.DeepEqual(b, full) {
			t.Fatalf("sort %s: brief %+v, want %+v", sort, b, full)
		}
	}
}

// A file id drawn ahead (NewFileID) is the new original's; a duplicate
// drawn one for leaves it unused and is recorded all the same.
func TestIngestTakesADrawnID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, s := openFiles(t)
	first, err := s.NewFileID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.NewFileID(ctx)
	if err != nil || id <= first {
		t.Fatalf("ids %d then %d, %v", first, id, err)
	}
	f := newFile("drawn", "")
	if _, err := s.Ingest(ctx, docflow.IngestRecord{ID: id, File: f, Dedup: true}); err != nil || f.ID != id {
		t.Fatalf("file %d, want the drawn %d: %v", f.ID, id, err)
	}
	again, err := s.NewFileID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dup := newFile("drawn", "")
	orig, err := s.Ingest(ctx, docflow.IngestRecord{ID: again, File: dup, Dedup: true})
	if err != nil || orig == nil || orig.ID != id || dup.Status != docflow.StatusDuplicate || dup.ID == 0 || dup.ID == id {
		t.Fatalf("duplicate %+v of %+v: %v", dup, orig, err)
	}
}
