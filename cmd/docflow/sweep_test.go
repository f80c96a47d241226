package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"docflow/storage/blob"
	"docflow/storage/blob/blobtest"
	"docflow/storage/postgres"
)

func TestSweepBlobsCommand(t *testing.T) {
	ctx := context.Background()
	url, cleanup := testDatabaseURL(t)
	defer cleanup()
	workdir := t.TempDir()
	t.Setenv("DATABASE_URL", url)
	t.Setenv("WORKDIR", workdir)
	t.Setenv("LOG_LEVEL", "warn")
	blobs, err := blob.Open(filepath.Join(workdir, "blobs"), blob.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	orphan := blobtest.PutAged(t, blobs, "orphan", 3*24*time.Hour)

	var out bytes.Buffer
	if err := run(ctx, []string{"sweep-blobs"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "1 blobs examined, 1 old enough to check, 1 removed (6 bytes freed)") || blobtest.Exists(t, blobs, orphan) {
		t.Fatalf("output %q, orphan kept %v", out.String(), blobtest.Exists(t, blobs, orphan))
	}

	db, err := postgres.Open(ctx, url, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	unlock, ok, err := postgres.NewFileStore(db).TryLockBlobSweep(ctx)
	if err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	defer unlock()
	if err := run(ctx, []string{"sweep-blobs"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "another docflow process is sweeping") {
		t.Fatalf("sweep while another holds the lock: %v", err)
	}
}
