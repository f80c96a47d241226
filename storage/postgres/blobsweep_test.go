package postgres

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"docflow/storage/blob"
	"docflow/storage/blob/blobtest"
)

func openBlobFiles(t *testing.T) (*DB, *FileStore) {
	t.Helper()
	db := openTest(t)
	return db, NewFileStore(db)
}

// insertRefs records one file per row of refs: original, processed and
// sidecar blob keys ("" for none).
func insertRefs(t *testing.T, db *DB, refs ...[3]string) {
	t.Helper()
	for i, r := range refs {
		meta := "{}"
		if r[2] != "" {
			meta = `{"metadata_sidecar": "` + r[2] + `"}`
		}
		_, err := db.Pool.Exec(context.Background(), `INSERT INTO files (filehash, original_filename, stored_filename,
			file_size, mime_type, status, original_blob, processed_blob, ai_metadata)
			VALUES ($1, 'f.pdf', $1 || '.pdf', 1, 'application/pdf', 'processing', $2, $3, $4::jsonb)`,
			r[0]+"-"+string(rune('a'+i)), r[0], r[1], meta)
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestBlobsInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openBlobFiles(t)
	insertRefs(t, db, [3]string{"orig", "proc", "side"}, [3]string{"orig2", "", ""})
	got, err := s.BlobsInUse(ctx, []string{"orig", "proc", "side", "orig2", "unused", "", "orig"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"orig": true, "proc": true, "side": true, "orig2": true, "unused": false, "": false}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if u, ok := got[k]; !ok || u != v {
			t.Fatalf("%q: got %v (answered %v), want %v", k, u, ok, v)
		}
	}
	if got, err := s.BlobsInUse(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("no keys: %v %v", got, err)
	}
	for key, want := range map[string]bool{"proc": true, "unused": false, "": false} {
		if used, err := s.BlobInUse(ctx, key); err != nil || used != want {
			t.Fatalf("BlobInUse(%q) = %v %v", key, used, err)
		}
	}
}

// Each reference is looked up on its index, whatever the table's size: a
// sweep asks about every stored blob, a batch at a time.
func TestBlobsInUseReadsIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openBlobFiles(t)
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// With sequential scans priced out, a plan that still has one found
	// no usable index.
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), `RESET enable_seqscan`) //nolint:errcheck
	rows, err := conn.Query(ctx, `EXPLAIN `+blobsInUseQuery, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	for _, idx := range []string{"files_original_blob", "files_processed_blob", "files_sidecar_blob"} {
		if !strings.Contains(text, idx) {
			t.Fatalf("plan does not use %s:\n%s", idx, text)
		}
	}
	if strings.Contains(text, "Seq Scan on files") {
		t.Fatalf("plan scans files:\n%s", text)
	}
}

// sweepStore is a blob store with blobs stored (and aged) for a sweep test.
type sweepStore struct {
	t *testing.T
	*blob.Local
}

func (s sweepStore) put(data string, ago time.Duration) string {
	s.t.Helper()
	return blobtest.PutAged(s.t, s.Local, data, ago)
}

func (s sweepStore) exists(key string) bool {
	s.t.Helper()
	return blobtest.Exists(s.t, s.Local, key)
}

func openSweepStore(t *testing.T, dir string) sweepStore {
	t.Helper()
	l, err := blob.Open(dir, blob.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return sweepStore{t, l}
}

// A sweep against the records keeps what a file references (as original,
// processed version or sidecar), young blobs, blobs stored again and temp
// files, and removes the rest.
func TestSweepAgainstRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const minAge = 24 * time.Hour
	db, s := openBlobFiles(t)
	bs := openSweepStore(t, t.TempDir())
	old := 2 * minAge
	orig := bs.put("original", old)
	proc := bs.put("processed", old)
	side := bs.put("sidecar", old)
	stale := bs.put("stale processed version", old)
	young := bs.put("young orphan", minAge/2)
	reused := bs.put("stored again", old)
	bs.put("stored again", 0)
	insertRefs(t, db, [3]string{orig, proc, side})
	temp := filepath.Join(bs.Root(), ".tmp", "put-1")
	if err := os.WriteFile(temp, []byte("in flight"), 0o600); err != nil {
		t.Fatal(err)
	}
	ago := time.Now().Add(-old)
	os.Chtimes(temp, ago, ago) //nolint:errcheck

	st, err := bs.Sweep(ctx, blob.SweepOptions{MinAge: minAge, InUse: s.BlobsInUse})
	if err != nil {
		t.Fatal(err)
	}
	want := blob.SweepStats{Examined: 6, Old: 4, Removed: 1, Bytes: int64(len("stale processed version"))}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	if bs.exists(stale) {
		t.Fatal("unreferenced old blob kept")
	}
	for name, k := range map[string]string{"original": orig, "processed": proc, "sidecar": side, "young": young, "stored again": reused} {
		if !bs.exists(k) {
			t.Fatalf("%s blob removed", name)
		}
	}
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("temp file: %v", err)
	}
}

// Two sweeps at once (two processes on one directory, without the lock)
// neither fail nor remove anything referenced, and remove each orphan once.
func TestConcurrentSweeps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const minAge = time.Hour
	db, s := openBlobFiles(t)
	dir := t.TempDir()
	a, b := openSweepStore(t, dir), openSweepStore(t, dir)
	var kept, orphans []string
	var refs [][3]string
	for i := range 300 {
		k := a.put(strings.Repeat("x", i+1), 2*minAge)
		if i%3 == 0 {
			kept = append(kept, k)
			refs = append(refs, [3]string{k, "", ""})
		} else {
			orphans = append(orphans, k)
		}
	}
	insertRefs(t, db, refs...)
	var wg sync.WaitGroup
	stats := make([]blob.SweepStats, 2)
	errs := make([]error, 2)
	for i, store := range []sweepStore{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[i], errs[i] = store.Sweep(ctx, blob.SweepOptions{MinAge: minAge, Batch: 7, InUse: s.BlobsInUse})
		}()
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil || stats[i].Failed != 0 {
			t.Fatalf("sweep %d: %+v %v", i, stats[i], errs[i])
		}
	}
	if n := stats[0].Removed + stats[1].Removed; n != len(orphans) {
		t.Fatalf("removed %d in all (%+v, %+v), want %d", n, stats[0], stats[1], len(orphans))
	}
	for _, k := range kept {
		if !a.exists(k) {
			t.Fatalf("referenced blob %s removed", k)
		}
	}
	for _, k := range orphans {
		if a.exists(k) {
			t.Fatalf("orphan %s kept", k)
		}
	}
	if info, err := b.Put(ctx, bytes.NewReader([]byte("fresh")), 0); err != nil || !info.Created {
		t.Fatalf("put after the sweeps: %+v %v", info, err)
	}
}

// One session at a time holds the sweep lock; unlocking gives it and the
// connection back.
func TestTryLockBlobSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openBlobFiles(t)
	unlock, ok, err := s.TryLockBlobSweep(ctx)
	if err != nil || !ok {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	other := NewFileStore(db)
	if _, ok2, err := other.TryLockBlobSweep(ctx); err != nil || ok2 {
		t.Fatalf("second lock while held: %v %v", ok2, err)
	}
	unlock()
	unlock2, ok, err := other.TryLockBlobSweep(ctx)
	if err != nil || !ok {
		t.Fatalf("lock after unlock: %v %v", ok, err)
	}
	unlock2()
	if n := db.Pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections still acquired", n)
	}
	var held int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND objid = $1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, blobSweepLock).Scan(&held); err != nil || held != 0 {
		t.Fatalf("%d advisory locks still held (%v)", held, err)
	}
}
