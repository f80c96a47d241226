// Package blob implements docflow.BlobStore on the local filesystem:
// content-addressed files under a root directory, sharded by hash prefix.
package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
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
}

// Local is a content-addressed store on disk: a blob with SHA-256 key
// "abcd…" lives at <root>/ab/cd/abcd…. Writes go to a temp file, are
// fsynced, renamed into place and the directory fsynced, so a key that
// exists always names complete content.
type Local struct {
	root string
	opts Options
	bufs sync.Pool
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
	l.removeStaleTemps()
	return l, nil
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
func (l *Local) Put(ctx context.Context, r io.Reader, maxSize int64) (docflow.BlobInfo, error) {
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
	h := sha256.New()
	n, err := l.copy(ctx, tmp, h, r, maxSize)
	if err != nil {
		return docflow.BlobInfo{}, err
	}
	if !l.opts.NoSync {
		if err := tmp.Sync(); err != nil {
			return docflow.BlobInfo{}, fmt.Errorf("blob put: sync: %w", err)
		}
	}
	if err := tmp.Close(); err != nil {
		return docflow.BlobInfo{}, fmt.Errorf("blob put: close: %w", err)
	}
	key := hex.EncodeToString(h.Sum(nil))
	info := docflow.BlobInfo{Key: key, Size: n}
	final := l.path(key)
	if st, err := os.Stat(final); err == nil && st.Size() == n {
		// NOTE: same content already stored; the temp copy is dropped by
		// the deferred cleanup. Content addressing makes this safe.
		return info, nil
	}
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return docflow.BlobInfo{}, fmt.Errorf("blob put: %w", err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return docflow.BlobInfo{}, fmt.Errorf("blob put: rename: %w", err)
	}
	keep = true
	if !l.opts.NoSync {
		if err := syncDir(dir); err != nil {
			return docflow.BlobInfo{}, fmt.Errorf("blob put: sync dir: %w", err)
		}
	}
	info.Created = true
	return info, nil
}

// copy writes r to f and h, refusing more than maxSize bytes and stopping
// when ctx ends.
func (l *Local) copy(ctx context.Context, f *os.File, h hash.Hash, r io.Reader, maxSize int64) (int64, error) {
	bp := l.bufs.Get().(*[]byte)
	defer l.bufs.Put(bp)
	buf := *bp
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("blob put: %w", err)
		}
		m, rerr := r.Read(buf)
		if m > 0 {
			n += int64(m)
			if maxSize > 0 && n > maxSize {
				return n, docflow.Errorf(docflow.ETOOLARGE, "File exceeds the maximum of %d bytes", maxSize)
			}
			h.Write(buf[:m])
			if _, err := f.Write(buf[:m]); err != nil {
				return n, fmt.Errorf("blob put: write: %w", err)
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, fmt.Errorf("blob put: read: %w", rerr)
		}
	}
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
