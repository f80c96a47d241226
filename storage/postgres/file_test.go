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
