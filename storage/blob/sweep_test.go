package blob_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"docflow/storage/blob"
)

const day = 24 * time.Hour

func openLocal(t *testing.T) *blob.Local {
	t.Helper()
	l, err := blob.Open(t.TempDir(), blob.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// put stores data and returns its key.
func put(t *testing.T, l *blob.Local, data []byte) string {
	t.Helper()
	info, err := l.Put(context.Background(), bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	return info.Key
}

// age sets the modification time of path to ago before now.
func age(t *testing.T, path string, ago time.Duration) {
	t.Helper()
	old := time.Now().Add(-ago)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

func blobPath(t *testing.T, l *blob.Local, key string) string {
	t.Helper()
	p, err := l.Path(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func exists(l *blob.Local, key string) bool {
	ok, _ := l.Exists(context.Background(), key)
	return ok
}

// A blob Put finds already stored counts as new again: both the path for
// content that fits in the first buffer and the one for larger content.
func TestPutRefreshesStoredBlob(t *testing.T) {
	l := openLocal(t)
	for _, size := range []int{10, 300 << 10} {
		data := bytes.Repeat([]byte{byte(size)}, size)
		key := put(t, l, data)
		p := blobPath(t, l, key)
		age(t, p, 3*day)
		info, err := l.Put(context.Background(), bytes.NewReader(data), 0)
		if err != nil || info.Created || info.Key != key {
			t.Fatalf("size %d again: %+v %v", size, info, err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if since := time.Since(st.ModTime()); since > time.Minute {
			t.Fatalf("size %d: modified %s ago after a second Put", size, since)
		}
	}
}

func TestWalkListsBlobsOnly(t *testing.T) {
	ctx := context.Background()
	l := openLocal(t)
	want := []string{put(t, l, []byte("one")), put(t, l, []byte("two")), put(t, l, []byte("three"))}
	slices.Sort(want)
	root := l.Root()
	// A temp file, a stray file in a shard, a key in the wrong shard, an
	// upper-case key, a directory named like a key, a stray top-level dir.
	if err := os.WriteFile(filepath.Join(root, ".tmp", "put-123"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Dir(blobPath(t, l, want[0]))
	other := strings.Repeat("ab", 32)
	for name, dir := range map[string]string{"notes.txt": shard, other: shard, strings.ToUpper(want[0]): shard} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "cd", "ef", "cdef"+strings.Repeat("0", 60)), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "lost+found"), 0o750); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := l.Walk(ctx, func(key string, mod time.Time) error {
		if time.Since(mod) > time.Minute {
			t.Errorf("%s: modified %s", key, mod)
		}
		got = append(got, key)
		return nil
	})
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("walk: %v %v, want %v", got, err, want)
	}
	stop := errors.New("stop")
	n := 0
	if err := l.Walk(ctx, func(string, time.Time) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("walk stopped by fn: %v after %d", err, n)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := l.Walk(cctx, func(string, time.Time) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("walk with a cancelled context: %v", err)
	}
}

// inUseOf answers InUse from a set of referenced keys and counts calls.
type inUseOf struct {
	used  map[string]bool
	calls int
	asked int
}

func (f *inUseOf) InUse(_ context.Context, keys []string) (map[string]bool, error) {
	f.calls++
	f.asked += len(keys)
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = f.used[k]
	}
	return out, nil
}

func TestSweepRemovesOldUnreferencedBlobs(t *testing.T) {
	ctx := context.Background()
	l := openLocal(t)
	referenced := put(t, l, []byte("referenced"))
	orphan := put(t, l, []byte("orphan, old"))
	young := put(t, l, []byte("orphan, young"))
	reused := put(t, l, []byte("orphan, stored again"))
	for _, k := range []string{referenced, orphan, reused} {
		age(t, blobPath(t, l, k), 2*day)
	}
	age(t, blobPath(t, l, young), day/2)
	put(t, l, []byte("orphan, stored again")) // an upload or a step uses it again
	temp := filepath.Join(l.Root(), ".tmp", "put-inflight")
	if err := os.WriteFile(temp, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	age(t, temp, 2*day)

	f := &inUseOf{used: map[string]bool{referenced: true}}
	st, err := l.Sweep(ctx, blob.SweepOptions{MinAge: day, InUse: f.InUse})
	if err != nil {
		t.Fatal(err)
	}
	want := blob.SweepStats{Examined: 4, Old: 2, Removed: 1, Bytes: int64(len("orphan, old"))}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	if exists(l, orphan) {
		t.Fatal("old unreferenced blob kept")
	}
	for name, k := range map[string]string{"referenced": referenced, "young": young, "stored again": reused} {
		if !exists(l, k) {
			t.Fatalf("%s blob removed", name)
		}
	}
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("temp file: %v", err)
	}
	// The store still works for the removed content.
	if info, err := l.Put(ctx, bytes.NewReader([]byte("orphan, old")), 0); err != nil || !info.Created {
		t.Fatalf("put after sweep: %+v %v", info, err)
	}
}

func TestSweepBatchesAndKeepsUnanswered(t *testing.T) {
	ctx := context.Background()
	l := openLocal(t)
	var keys []string
	for i := range 7 {
		k := put(t, l, []byte{'b', byte(i)})
		age(t, blobPath(t, l, k), 2*day)
		keys = append(keys, k)
	}
	f := &inUseOf{used: map[string]bool{}}
	// Leave one key out of every answer: it must be kept.
	var left string
	st, err := l.Sweep(ctx, blob.SweepOptions{MinAge: day, Batch: 3, InUse: func(ctx context.Context, batch []string) (map[string]bool, error) {
		if len(batch) > 3 {
			t.Errorf("batch of %d", len(batch))
		}
		out, err := f.InUse(ctx, batch)
		if left == "" {
			left = batch[0]
			delete(out, left)
		}
		return out, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if f.calls != 3 || f.asked != 7 || st.Examined != 7 || st.Old != 7 || st.Removed != 6 || st.Bytes != 12 {
		t.Fatalf("%d calls for %d keys, stats %+v", f.calls, f.asked, st)
	}
	if !exists(l, left) {
		t.Fatal("a blob InUse did not answer for was removed")
	}
}

func TestSweepStopsOnInUseError(t *testing.T) {
	l := openLocal(t)
	k := put(t, l, []byte("x"))
	age(t, blobPath(t, l, k), 2*day)
	boom := errors.New("database down")
	_, err := l.Sweep(context.Background(), blob.SweepOptions{MinAge: day,
		InUse: func(context.Context, []string) (map[string]bool, error) { return nil, boom }})
	if !errors.Is(err, boom) || !exists(l, k) {
		t.Fatalf("sweep: %v, blob kept %v", err, exists(l, k))
	}
	if _, err := l.Sweep(context.Background(), blob.SweepOptions{InUse: (&inUseOf{}).InUse}); err == nil {
		t.Fatal("sweep without MinAge accepted")
	}
}

// Between the answer and the removal a blob may be stored again, removed
// by someone else, or fail to be removed: each is handled on its own and
// the sweep goes on.
func TestSweepRechecksBeforeRemoving(t *testing.T) {
	ctx := context.Background()
	l := openLocal(t)
	reused := put(t, l, []byte("a"))
	gone := put(t, l, []byte("b"))
	stuck := put(t, l, []byte("c"))
	plain := put(t, l, []byte("d"))
	for _, k := range []string{reused, gone, stuck, plain} {
		age(t, blobPath(t, l, k), 2*day)
	}
	var failed []string
	st, err := l.Sweep(ctx, blob.SweepOptions{MinAge: day,
		InUse: func(ctx context.Context, keys []string) (map[string]bool, error) {
			put(t, l, []byte("a"))
			if err := l.Delete(ctx, gone); err != nil {
				t.Fatal(err)
			}
			// A non-empty directory where the blob was: its removal fails.
			p := blobPath(t, l, stuck)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(p, "x"), 0o750); err != nil {
				t.Fatal(err)
			}
			age(t, p, 2*day)
			return map[string]bool{reused: false, gone: false, stuck: false, plain: false}, nil
		},
		OnError: func(key string, err error) { failed = append(failed, key) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Removed != 1 || st.Failed != 1 || !slices.Equal(failed, []string{stuck}) {
		t.Fatalf("stats %+v, failed %v", st, failed)
	}
	if !exists(l, reused) || exists(l, plain) {
		t.Fatalf("reused kept %v, plain removed %v", exists(l, reused), !exists(l, plain))
	}
}
