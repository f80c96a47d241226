// Package blob implements docflow.BlobStore on the local filesystem:
// content-addressed files under a root directory, sharded by hash prefix.
//
// A blob is written to a temporary file, made durable, renamed into place
// and its directory made durable; concurrent writers share one filesystem
// flush (groupsync.go; BLOB_SYNC=file flushes each file). Put of content
// already stored refreshes its time. Walk lists the blobs, and Sweep
// removes those no record references (asked of docflow.FileStore's
// BlobsInUse in batches) once not stored, nor stored again, for a minimum
// age, looking again right before each removal. blobtest is the contract
// every BlobStore passes.
package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"docflow"
)

// tmpDir holds blobs being written. It lives under the root so that the
// final rename never crosses a filesystem boundary.
const tmpDir = ".tmp"

// staleTemp is how old a leftover temp file must be before Open removes it:
// younger ones may belong to another process writing right now.
const staleTemp = time.Hour

// copyBufSize is the chunk size of Put: large enough that hashing and the
// write syscall dominate, small enough that concurrent uploads stay cheap.
const copyBufSize = 128 << 10

// Options tune a Local store.
type Options struct {
	// NoSync skips the fsync of file and directory. Only for benchmarks and
	// throwaway data: a crash may then leave a truncated blob under its key.
	NoSync bool
	// Sync is how a Put makes its blob durable (default SyncGroup where
	// the system has syncfs, else SyncFile).
	Sync SyncMode
}

// SyncMode is how Put makes a blob durable before it returns.
type SyncMode string

const (
	// SyncGroup flushes the filesystem (syncfs) once for all the Puts
	// waiting at that moment: before the rename (the content) and after it
	// (the name). Concurrent uploads share the flushes, so the store is not
	// held to the disk's rate of journal commits; the flush also writes
	// whatever else is pending on that filesystem, so give the store its
	// own filesystem when other programs write a lot beside it.
	SyncGroup SyncMode = "group"
	// SyncFile fsyncs each blob's file and then its directory.
	SyncFile SyncMode = "file"
)

// Local is a content-addressed store on disk: a blob with SHA-256 key
// "abcd…" lives at <root>/ab/cd/abcd…. Writes go to a temp file, are
// made durable, renamed into place and the name made durable (see
// SyncMode), so a key that exists always names complete content.
type Local struct {
	root string
	opts Options
	bufs sync.Pool
	dirs sync.Map // shard directory -> *shard
	// group is the shared flush of SyncGroup (nil otherwise).
	group      *groupSync
	closeGroup func() error
}

var _ docflow.BlobStore = (*Local)(nil)

// Open prepares root (created if missing) and removes stale temp files.
func Open(root string, opts Options) (*Local, error) {
	if root == "" {
		return nil, errors.New("blob: empty root")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("blob root %s: %w", root, err)
	}
	if err := os.MkdirAll(filepath.Join(abs, tmpDir), 0o750); err != nil {
		return nil, fmt.Errorf("blob root %s: %w", abs, err)
	}
	l := &Local{root: abs, opts: opts}
	l.bufs.New = func() any { b := make([]byte, copyBufSize); return &b }
	if !opts.NoSync && opts.Sync != SyncFile {
		flush, closeFn, err := fsFlusher(abs)
		switch {
		case err == nil:
			l.group, l.closeGroup = newGroupSync(flush), closeFn
		case opts.Sync == SyncGroup && !errors.Is(err, errors.ErrUnsupported):
			return nil, err
		}
	}
	l.removeStaleTemps()
	return l, nil
}

// Close releases the store's handle on its directory.
func (l *Local) Close() error {
	if l.closeGroup != nil {
		return l.closeGroup()
	}
	return nil
}

// SyncMode reports how Put makes blobs durable ("" with NoSync).
func (l *Local) SyncMode() SyncMode {
	switch {
	case l.opts.NoSync:
		return ""
	case l.group != nil:
		return SyncGroup
	}
	return SyncFile
}

// Root returns the store's directory.
func (l *Local) Root() string { return l.root }

func (l *Local) removeStaleTemps() {
	entries, err := os.ReadDir(filepath.Join(l.root, tmpDir))
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
			os.Remove(filepath.Join(l.root, tmpDir, e.Name())) //nolint:errcheck
		}
	}
}

// validKey accepts only a lower-case hex SHA-256, so a key can never
// address anything outside the store.
func validKey(key string) bool {
	if len(key) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (l *Local) path(key string) string {
	return filepath.Join(l.root, key[:2], key[2:4], key)
}

// Put streams r to a temp file while hashing it, then moves it under its
// key. Content that already exists is not written twice (Created false).
//
// The first buffer is filled before anything touches the disk: content
// that fits in it (most documents) is hashed first, so a copy already
// stored costs no file at all, and every write is a whole buffer rather
// than whatever the reader happened to return (a multipart part yields a
// few KB per read).
func (l *Local) Put(ctx context.Context, r io.Reader, maxSize int64) (docflow.BlobInfo, error) {
	bp := l.bufs.Get().(*[]byte)
	defer l.bufs.Put(bp)
	buf := *bp
	h := sha256.New()
	m, eof, err := fill(ctx, r, buf, 0, maxSize)
	if err != nil {
		return docflow.BlobInfo{}, err
	}
	if eof {
		h.Write(buf[:m])
		key := hex.EncodeToString(h.Sum(nil))
		if l.stored(key, int64(m)) {
			return docflow.BlobInfo{Key: key, Size: int64(m)}, l.settled()
		}
		h.Reset()
	}
	tmp, err := os.CreateTemp(filepath.Join(l.root, tmpDir), "put-*")
	if err != nil {
		return docflow.BlobInfo{}, fmt.Errorf("blob put: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name()) //nolint:errcheck
		}
	}()
	var n int64
	for {
		h.Write(buf[:m])
		if _, err := tmp.Write(buf[:m]); err != nil {
			return docflow.BlobInfo{}, fmt.Errorf("blob put: write: %w", err)
		}
		n += int64(m)
		if eof {
			break
		}
		if m, eof, err = fill(ctx, r, buf, n, maxSize); err != nil {
			return docflow.BlobInfo{}, err
		}
	}
	if !l.opts.NoSync && l.group == nil {
		if err := tmp.Sync(); err != nil {
			return docflow.BlobInfo{}, fmt.Errorf("blob put: sync: %w", err)
		}
	}
	if err := tmp.Close(); err != nil {
		return docflow.BlobInfo{}, fmt.Errorf("blob put: close: %w", err)
	}
	key := hex.EncodeToString(h.Sum(nil))
	info := docflow.BlobInfo{Key: key, Size: n}
	if l.stored(key, n) {
		// NOTE: same content already stored; the temp copy is dropped by
		// the deferred cleanup. Content addressing makes this safe.
		return info, l.settled()
	}
	// The content is durable before its name is: a crash never leaves a
	// key naming a file whose data did not reach the disk.
	if err := l.settled(); err != nil {
		return docflow.BlobInfo{}, err
	}
	final := l.path(key)
	dir := filepath.Dir(final)
	if err := l.shardDir(dir); err != nil {
		return docflow.BlobInfo{}, fmt.Errorf("blob put: %w", err)
	}
	err = os.Rename(tmp.Name(), final)
	if errors.Is(err, fs.ErrNotExist) {
		// The shard was removed behind the store's back: forget it and
		// create it again.
		l.forget(dir)
		if err = l.shardDir(dir); err == nil {
			err = os.Rename(tmp.Name(), final)
		}
	}
	if err != nil {
		return docflow.BlobInfo{}, fmt.Errorf("blob put: rename: %w", err)
	}
	keep = true
	if l.group != nil {
		if err := l.settled(); err != nil {
			return docflow.BlobInfo{}, err
		}
	} else if !l.opts.NoSync {
		if err := syncDir(dir); err != nil {
			return docflow.BlobInfo{}, fmt.Errorf("blob put: sync dir: %w", err)
		}
		if err := l.settle(dir); err != nil {
			return docflow.BlobInfo{}, fmt.Errorf("blob put: sync dir: %w", err)
		}
	}
	info.Created = true
	return info, nil
}

// settled waits, under SyncGroup, until everything written so far is
// durable: this Put's content or name, or a blob found already stored
// (another Put may have renamed it into place a moment ago and be waiting
// for the flush itself). Without SyncGroup it does nothing.
func (l *Local) settled() error {
	if l.group == nil {
		return nil
	}
	if err := l.group.wait(); err != nil {
		return fmt.Errorf("blob put: sync: %w", err)
	}
	return nil
}

// stored reports whether key is already stored with size bytes. A blob
// found stored has its modification time set to now: Sweep removes only
// blobs unchanged for a while, and a blob used again must count as new,
// whatever its age. When the time cannot be set (the blob was swept a
// moment ago, or belongs to another user) it reports false, and Put writes
// the content again under its key.
func (l *Local) stored(key string, size int64) bool {
	p := l.path(key)
	st, err := os.Stat(p)
	if err != nil || st.Size() != size {
		return false
	}
	now := time.Now()
	return os.Chtimes(p, now, now) == nil
}

// fill reads r into buf until buf is full or r ends (eof), refusing to go
// past maxSize in total (done bytes were read before) and stopping when ctx
// ends.
func fill(ctx context.Context, r io.Reader, buf []byte, done, maxSize int64) (n int, eof bool, err error) {
	for n < len(buf) {
		if err := ctx.Err(); err != nil {
			return n, false, fmt.Errorf("blob put: %w", err)
		}
		m, rerr := r.Read(buf[n:])
		n += m
		if maxSize > 0 && done+int64(n) > maxSize {
			return n, false, docflow.Errorf(docflow.ETOOLARGE, "File exceeds the maximum of %d bytes", maxSize)
		}
		if rerr == io.EOF {
			return n, true, nil
		}
		if rerr != nil {
			return n, false, fmt.Errorf("blob put: read: %w", rerr)
		}
	}
	return n, false, nil
}

// shardDir makes sure dir (<root>/ab/cd) and its parent exist. A
// directory made here is not durable until settle has synced its parent.
func (l *Local) shardDir(dir string) error {
	if err := l.dirState(filepath.Dir(dir)).ensure(filepath.Dir(dir)); err != nil {
		return err
	}
	return l.dirState(dir).ensure(dir)
}

// settle makes the directories shardDir created for dir durable: the
// parent of each new one is fsynced. It runs after the blob's own
// directory was synced, so on a journalling filesystem these syncs find
// the creation already committed and cost little.
func (l *Local) settle(dir string) error {
	if err := l.dirState(dir).settle(dir); err != nil {
		return err
	}
	return l.dirState(filepath.Dir(dir)).settle(filepath.Dir(dir))
}

func (l *Local) dirState(dir string) *shard {
	if v, ok := l.dirs.Load(dir); ok {
		return v.(*shard)
	}
	v, _ := l.dirs.LoadOrStore(dir, &shard{nosync: l.opts.NoSync})
	return v.(*shard)
}

// shard remembers that a directory exists (sparing a syscall per Put) and
// whether its entry in the parent still needs a sync. Puts into a new
// directory all wait for that one sync.
// NOTE: a directory another process has just created may still be
// settling; that process syncs the parent within a millisecond.
type shard struct {
	nosync  bool
	mu      sync.Mutex
	exists  bool
	pending bool
}

func (d *shard) ensure(dir string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.exists {
		return nil
	}
	err := os.Mkdir(dir, 0o750)
	switch {
	case err == nil:
		d.pending = !d.nosync
	case errors.Is(err, fs.ErrExist):
	default:
		return err
	}
	d.exists = true
	return nil
}

func (d *shard) settle(dir string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.pending {
		return nil
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	d.pending = false
	return nil
}

// forget drops what is known of dir and its parent (removed from outside).
func (l *Local) forget(dir string) {
	l.dirs.Delete(dir)
	l.dirs.Delete(filepath.Dir(dir))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func notFound(key string) error {
	return docflow.Errorf(docflow.ENOTFOUND, "File not found in storage")
}

// Open returns the blob's content and size; ENOTFOUND when missing.
func (l *Local) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	if !validKey(key) {
		return nil, 0, notFound(key)
	}
	f, err := os.Open(l.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, notFound(key)
	} else if err != nil {
		return nil, 0, fmt.Errorf("blob open: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("blob open: %w", err)
	}
	return f, st.Size(), nil
}

// Path returns the blob's file path; ENOTFOUND when missing.
func (l *Local) Path(ctx context.Context, key string) (string, error) {
	if !validKey(key) {
		return "", notFound(key)
	}
	p := l.path(key)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return "", notFound(key)
	} else if err != nil {
		return "", fmt.Errorf("blob path: %w", err)
	}
	return p, nil
}

// Exists reports whether the blob is stored.
func (l *Local) Exists(ctx context.Context, key string) (bool, error) {
	if !validKey(key) {
		return false, nil
	}
	_, err := os.Stat(l.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("blob exists: %w", err)
	}
	return true, nil
}

// Delete removes the blob; deleting a missing blob is not an error.
func (l *Local) Delete(ctx context.Context, key string) error {
	if !validKey(key) {
		return nil
	}
	err := os.Remove(l.path(key))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob delete: %w", err)
	}
	return nil
}

// TempCount returns the number of temp files in flight or left behind; tests
// use it to prove an aborted Put leaves nothing.
func (l *Local) TempCount() int {
	entries, _ := os.ReadDir(filepath.Join(l.root, tmpDir))
	return len(entries)
}
