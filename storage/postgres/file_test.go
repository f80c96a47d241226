package postgres_test

import (
	"context"
	"sync"
	"testing"

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

func noRun(*docflow.File) (string, map[string]any, []streams.OutboxMessage, error) {
	return "", nil, nil, nil
}

func TestIngestRacesAndDailyLimit(t *testing.T) {
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "files")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	s := postgres.NewFileService(db)

	// Ten identical files at once: exactly one original.
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Ingest(ctx, postgres.IngestRecord{File: newFile("samehash", ""), Dedup: true, Prepare: noRun})
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
			_, err := s.Ingest(ctx, postgres.IngestRecord{File: newFile("h"+string(rune('a'+i)), "alice"), Dedup: true, DailyLimit: 3, Prepare: noRun})
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

func TestFindFilesDeepPagesMatchOffset(t *testing.T) {
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "files")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	s := postgres.NewFileService(db)
	// 7,000 rows with repeated timestamps and names so ties need the id.
	_, err = db.Pool.Exec(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, created_at)
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
