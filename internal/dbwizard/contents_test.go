package dbwizard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"docflow"
	"docflow/storage/blob"
	"docflow/storage/legacy/legacytest"
	"docflow/storage/postgres"
)

// countingBlobs is a blob store that counts the contents stored in it,
// by key.
type countingBlobs struct {
	docflow.BlobStore
	mu   sync.Mutex
	puts map[string]int
}

func (c *countingBlobs) Put(ctx context.Context, r io.Reader, maxSize int64) (docflow.BlobInfo, error) {
	info, err := c.BlobStore.Put(ctx, r, maxSize)
	if err == nil {
		c.mu.Lock()
		c.puts[info.Key]++
		c.mu.Unlock()
	}
	return info, err
}

func newCountingBlobs(t *testing.T) *countingBlobs {
	t.Helper()
	bs, err := blob.Open(t.TempDir(), blob.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	return &countingBlobs{BlobStore: bs, puts: map[string]int{}}
}

// workFolder writes the original's work folder for the seed and returns
// its path.
func workFolder(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "docuelevate", "workdir")
	if err := legacytest.WriteWorkFolder(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// blobOf reads the content file source id's record points at (version
// original or processed) from the store.
func blobOf(t *testing.T, db *postgres.DB, bs docflow.BlobStore, name, version string) []byte {
	t.Helper()
	var key string
	if err := db.Pool.QueryRow(context.Background(), `SELECT `+version+`_blob FROM files WHERE original_filename = $1`, name).Scan(&key); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if key == "" {
		t.Fatalf("%s has no %s blob", name, version)
	}
	rc, _, err := bs.Open(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkContents(t *testing.T, db *postgres.DB, bs docflow.BlobStore, job *docflow.MigrationJob) {
	t.Helper()
	for _, c := range []struct {
		name, version string
		want          []byte
	}{
		{"invoice.pdf", "original", legacytest.InvoicePDF},
		{"invoice.pdf", "processed", legacytest.InvoiceProcessedPDF},
		{"invoice copy.pdf", "original", legacytest.InvoicePDF},
		{"letter.txt", "original", legacytest.LetterText},
	} {
		if got := blobOf(t, db, bs, c.name, c.version); !bytes.Equal(got, c.want) {
			t.Errorf("%s (%s): %d bytes, not the original's", c.name, c.version, len(got))
		}
	}
	// Nothing of the missing file nor of the one outside the folder.
	if n := count(t, db, `SELECT count(*) FROM files WHERE original_filename IN ('scan.png', 'notes.txt')
		AND (original_blob <> '' OR processed_blob <> '')`); n != 0 {
		t.Errorf("%d of the missing or refused files have content", n)
	}
	// The report names each file that did not come, and why.
	var lines []string
	for _, u := range job.Unmapped {
		if u.Table == postgres.LegacyContentsTable {
			lines = append(lines, u.Reason)
		}
	}
	report := strings.Join(lines, "\n")
	for _, want := range []string{
		"original " + legacytest.ScanOriginalPath + ": no file at this path",
		"original " + legacytest.TraversalPath + ": the path leaves the original's work folder: refused",
		"original " + legacytest.OutsidePath + ": the path leaves the original's work folder: refused",
		"processed version " + legacytest.SiblingPath + ": the path leaves the original's work folder: refused",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q; it has:\n%s", want, report)
		}
	}
	if len(lines) != 2 {
		t.Errorf("%d report lines about contents, want 2 (the missing file and the refused one):\n%s", len(lines), report)
	}
	p := job.Table(postgres.LegacyContentsTable)
	if p.RowCount != 5 || p.RowsCopied != 3 || !p.Done {
		t.Errorf("contents progress: %+v", p)
	}
}

func TestImportBringsContents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bs := newCountingBlobs(t)
	w, db := newWizard(t, Config{Blobs: bs})
	dir := workFolder(t)
	started, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: legacyFile(t), SourceFilesDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	job := waitJob(t, w, started.ID)
	if job.Status != docflow.MigrationCompleted {
		t.Fatalf("job: %+v", job)
	}
	checkImported(t, db)
	checkContents(t, db, bs, job)
	// The secret next to the folder was never read into the store.
	if ok, _ := bs.Exists(ctx, legacytest.Hash([]byte("not for the import\n"))); ok {
		t.Error("a file outside the work folder was stored")
	}
}

func TestImportContentsInterruptedResumes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bs := newCountingBlobs(t)
	var stop atomic.Bool
	stop.Store(true)
	w, db := newWizard(t, Config{Blobs: bs, Batch: 1, AfterBatch: func(j *docflow.MigrationJob) error {
		// Stop once the first file's content is in.
		for _, p := range j.Tables {
			if p.Name == postgres.LegacyContentsTable && p.RowsCopied >= 1 && stop.Load() {
				return errors.New("the process stopped")
			}
		}
		return nil
	}})
	dir := workFolder(t)
	req := docflow.MigrationRequest{SourceURL: legacyFile(t), SourceFilesDir: dir}
	first, err := w.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, w, first.ID); j.Status != docflow.MigrationFailed {
		t.Fatalf("interrupted job: %+v", j)
	}
	if n := count(t, db, `SELECT count(*) FROM files WHERE original_blob <> ''`); n == 0 || n >= 3 {
		t.Fatalf("%d files with content before the interruption", n)
	}
	stop.Store(false)
	second, err := w.Start(ctx, req)
	if err != nil || second.ID != first.ID {
		t.Fatalf("resume: %+v, %v", second, err)
	}
	job := waitJob(t, w, second.ID)
	if job.Status != docflow.MigrationCompleted {
		t.Fatalf("resumed job: %+v", job)
	}
	checkContents(t, db, bs, job)
	// Each content was stored once, interruption or not.
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for key, n := range bs.puts {
		if n != 1 {
			t.Errorf("blob %s stored %d times", key[:12], n)
		}
	}
	if len(bs.puts) != 3 {
		t.Errorf("%d contents stored, want 3 (invoice, its processed version, the letter)", len(bs.puts))
	}
}

// The folder is checked before anything is written.
func TestImportRefusesABadFolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, db := newWizard(t, Config{})
	url := legacyFile(t)
	for _, dir := range []string{"relative/dir", filepath.Join(t.TempDir(), "none"), url[len("sqlite://"):]} {
		_, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: url, SourceFilesDir: dir})
		if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(docflow.ErrorMessage(err), "source_files_dir") {
			t.Errorf("%s: %v", dir, err)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM db_migration_jobs`); n != 0 {
		t.Fatalf("%d jobs for refused imports", n)
	}
}

// A content that is not what the original recorded is not kept: the
// record stays without it, the report says so, and the store drops it.
func TestImportContentsCheckTheHash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bs := newCountingBlobs(t)
	w, db := newWizard(t, Config{Blobs: bs})
	dir := workFolder(t)
	changed := []byte("the letter, changed after the original recorded it\n")
	if err := os.WriteFile(filepath.Join(dir, strings.TrimPrefix(legacytest.LetterOriginalPath, "/workdir/")), changed, 0o644); err != nil {
		t.Fatal(err)
	}
	started, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: legacyFile(t), SourceFilesDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	job := waitJob(t, w, started.ID)
	if job.Status != docflow.MigrationCompleted {
		t.Fatalf("job: %+v", job)
	}
	if n := count(t, db, `SELECT count(*) FROM files WHERE original_filename = 'letter.txt' AND original_blob = ''`); n != 1 {
		t.Error("the changed letter was attached")
	}
	if ok, _ := bs.Exists(ctx, legacytest.Hash(changed)); ok {
		t.Error("the changed content stayed in the store")
	}
	found := false
	for _, u := range job.Unmapped {
		found = found || (u.Table == postgres.LegacyContentsTable &&
			strings.Contains(u.Reason, "original "+legacytest.LetterOriginalPath+": its content does not match the recorded hash"))
	}
	if !found {
		t.Errorf("the report does not name the changed letter: %+v", job.Unmapped)
	}
}
