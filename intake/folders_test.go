package intake

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/storage/blob"
	"docflow/storage/postgres"
)

// mapSettings is a settings source for tests.
type mapSettings map[string]string

func (m mapSettings) Get(k string) string { return m[k] }
func (m mapSettings) Lookup(context.Context, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "no")
}
func (m mapSettings) List(context.Context) ([]*docflow.Setting, error) { return nil, nil }
func (m mapSettings) Set(context.Context, string, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "no")
}
func (m mapSettings) Delete(context.Context, string) error { return nil }

func newTestService(t *testing.T, db *postgres.DB, blobs docflow.BlobStore, settings mapSettings) *Service {
	t.Helper()
	s, err := New(Config{Files: postgres.NewFileStore(db), Blobs: blobs, Settings: settings, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestNewRefusesMissingDependencies(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New accepted an empty config")
	}
}

func TestWatchFolderIngestsStableFilesOnceAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "intake")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	blobs, err := blob.Open(t.TempDir(), blob.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	settings := mapSettings{"WATCH_FOLDERS": dir, "WATCH_FOLDER_INTERVAL": "1"}
	svc := newTestService(t, db, blobs, settings)
	count := func(q string) int {
		var n int
		if err := db.Pool.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.pdf", "%PDF-1.4 a")
	write("notes.txt", "hello")
	write("bad.pdf", "not a pdf at all")
	write(".hidden.pdf", "%PDF-1.4 hidden")
	write("partial.pdf.part", "%PDF")

	w := svc.NewWatcher()
	if err := w.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM files`); n != 0 {
		t.Fatalf("first sight ingested %d files; a file must be stable over two polls", n)
	}
	// a.pdf keeps growing between polls: not yet stable.
	write("a.pdf", "%PDF-1.4 a, now complete")
	if err := w.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM files`); n != 1 {
		t.Fatalf("%d files after second poll, want notes.txt only", n)
	}
	if err := w.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM files WHERE source='watch_folder' AND owner_id IS NULL`); n != 2 {
		t.Fatalf("%d files", n)
	}
	for _, p := range []string{"processed/a.pdf", "processed/notes.txt", "rejected/bad.pdf", ".hidden.pdf", "partial.pdf.part"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if n := count(`SELECT count(*) FROM runs`); n != 2 {
		t.Fatalf("%d runs", n)
	}

	// A crash after the commit but before the move: the file is still in
	// the folder and a fresh process (new watcher, new service) must not
	// take it in again.
	write("c.pdf", "%PDF-1.4 c")
	st, _ := os.Stat(filepath.Join(dir, "c.pdf"))
	_, err = svc.ingestPath(ctx, filepath.Join(dir, "c.pdf"), nil, docflow.ChannelWatchFolder, ingestOptions{
		seen: &docflow.WatchSeen{Folder: dir, Name: "c.pdf", Size: st.Size(), MTime: st.ModTime()},
	})
	if err != nil {
		t.Fatal(err)
	}
	restarted := newTestService(t, db, blobs, settings).NewWatcher()
	restarted.Start(ctx)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dir, "processed", "c.pdf")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("restarted watcher never moved c.pdf")
		}
		time.Sleep(50 * time.Millisecond)
	}
	restarted.Stop()
	restarted.Stop() // idempotent
	if n := count(`SELECT count(*) FROM files WHERE original_filename='c.pdf'`); n != 1 {
		t.Fatalf("c.pdf recorded %d times", n)
	}
}
