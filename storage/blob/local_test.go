package blob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	"docflow"

	"docflow/storage/blob"
	"docflow/storage/blob/blobtest"
)

func TestLocalContract(t *testing.T) {
	for _, mode := range []blob.SyncMode{blob.SyncGroup, blob.SyncFile} {
		t.Run(string(mode), func(t *testing.T) {
			blobtest.RunContract(t, func(t *testing.T) blobtest.Store {
				l, err := blob.Open(t.TempDir(), blob.Options{Sync: mode})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				if l.SyncMode() != mode {
					t.Fatalf("sync mode %q, want %q", l.SyncMode(), mode)
				}
				return blobtest.Store{BlobStore: l, Leftovers: l.TempCount}
			})
		})
	}
}

// Put fills a 128 KB buffer before writing: sizes around the buffer's
// edge, the size limit at those edges and content already stored must all
// behave as for any other size.
func TestLocalPutAroundTheBufferSize(t *testing.T) {
	ctx := context.Background()
	l, err := blob.Open(t.TempDir(), blob.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const buf = 128 << 10
	for _, size := range []int{1, buf - 1, buf, buf + 1, 3*buf + 7} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i*7 + size)
		}
		// A reader that returns a few bytes at a time, like a multipart part.
		info, err := l.Put(ctx, iotest.HalfReader(bytes.NewReader(data)), int64(size))
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		sum := sha256.Sum256(data)
		if info.Key != hex.EncodeToString(sum[:]) || info.Size != int64(size) || !info.Created {
			t.Fatalf("size %d: %+v", size, info)
		}
		rc, n, err := l.Open(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if n != int64(size) || !bytes.Equal(got, data) {
			t.Fatalf("size %d: read back %d bytes", size, len(got))
		}
		if _, err := l.Put(ctx, bytes.NewReader(data), int64(size)-1); size > 1 && docflow.ErrorCode(err) != docflow.ETOOLARGE {
			t.Fatalf("size %d over the limit: %v", size, err)
		}
		again, err := l.Put(ctx, bytes.NewReader(data), 0)
		if err != nil || again.Created || again.Key != info.Key {
			t.Fatalf("size %d again: %+v %v", size, again, err)
		}
		if n := l.TempCount(); n != 0 {
			t.Fatalf("size %d: %d temp files left", size, n)
		}
	}
	// A shard directory removed behind the store's back is made again.
	info, err := l.Put(ctx, bytes.NewReader([]byte("shard")), 0)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := l.Path(ctx, info.Key)
	if err := os.RemoveAll(filepath.Dir(filepath.Dir(p))); err != nil {
		t.Fatal(err)
	}
	if info, err = l.Put(ctx, bytes.NewReader([]byte("shard")), 0); err != nil || !info.Created {
		t.Fatalf("after removing the shard: %+v %v", info, err)
	}
}
