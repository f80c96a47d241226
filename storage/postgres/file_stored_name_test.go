package postgres_test

import (
	"context"
	"testing"

	"docflow"
)

// A file is found by the stored file name uploads answer with.
func TestFindFileByStoredFilename(t *testing.T) {
	ctx := context.Background()
	_, s := openFiles(t)
	res := newFile("storedhash", "alice")
	if _, err := s.Ingest(ctx, docflow.IngestRecord{File: res}); err != nil {
		t.Fatal(err)
	}
	f, err := s.FindFileByStoredFilename(ctx, "storedhash.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != res.ID || f.StoredFilename != "storedhash.pdf" {
		t.Fatalf("found %+v, %v", f, err)
	}
	if _, err := s.FindFileByStoredFilename(ctx, "other.pdf"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("missing: %v", err)
	}
}
