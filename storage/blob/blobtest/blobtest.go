// Package blobtest is the contract every docflow.BlobStore must pass: the
// local store runs it, and an S3-compatible store runs the same suite.
package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"docflow"
)

// Store is a blob store under test. Leftovers, when not nil, reports how
// many incomplete writes the store holds (temp files, multipart uploads),
// so the suite can prove an aborted Put leaves nothing behind.
type Store struct {
	docflow.BlobStore
	Leftovers func() int
}

// RunContract runs the contract against stores made by newStore (a fresh,
// empty store per subtest).
func RunContract(t *testing.T, newStore func(t *testing.T) Store) {
	ctx := context.Background()

	t.Run("PutOpenRoundTrip", func(t *testing.T) {
		s := newStore(t)
		data := bytes.Repeat([]byte("docflow "), 100_000)
		info, err := s.Put(ctx, bytes.NewReader(data), 0)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if info.Key != hex.EncodeToString(sum[:]) || info.Size != int64(len(data)) || !info.Created {
			t.Fatalf("info %+v", info)
		}
		rc, size, err := s.Open(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if size != int64(len(data)) || !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes (size %d), want %d", len(got), size, len(data))
		}
		if ok, err := s.Exists(ctx, info.Key); err != nil || !ok {
			t.Fatalf("exists %v %v", ok, err)
		}
		p, err := s.Path(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		if onDisk, err := os.ReadFile(p); err != nil || !bytes.Equal(onDisk, data) {
			t.Fatalf("path content differs: %v", err)
		}
	})

	t.Run("SameContentTwiceIsOneBlob", func(t *testing.T) {
		s := newStore(t)
		a, err := s.Put(ctx, strings.NewReader("same"), 0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Put(ctx, strings.NewReader("same"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if a.Key != b.Key || !a.Created || b.Created {
			t.Fatalf("a %+v b %+v", a, b)
		}
	})

	t.Run("ConcurrentSameContent", func(t *testing.T) {
		s := newStore(t)
		data := bytes.Repeat([]byte{7}, 1<<20)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Put(ctx, bytes.NewReader(data), 0); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		rc, size, err := s.Open(ctx, hex.EncodeToString(sum[:]))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if size != int64(len(data)) || !bytes.Equal(got, data) {
			t.Fatal("content differs after concurrent puts")
		}
		checkLeftovers(t, s)
	})

	t.Run("EmptyContent", func(t *testing.T) {
		s := newStore(t)
		info, err := s.Put(ctx, strings.NewReader(""), 0)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size != 0 || info.Key != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
			t.Fatalf("info %+v", info)
		}
	})

	t.Run("MaxSizeLeavesNothing", func(t *testing.T) {
		s := newStore(t)
		data := bytes.Repeat([]byte("x"), 1000)
		_, err := s.Put(ctx, bytes.NewReader(data), 999)
		if docflow.ErrorCode(err) != docflow.ETOOLARGE {
			t.Fatalf("err %v, want ETOOLARGE", err)
		}
		sum := sha256.Sum256(data)
		if ok, _ := s.Exists(ctx, hex.EncodeToString(sum[:])); ok {
			t.Fatal("oversize blob stored")
		}
		checkLeftovers(t, s)
		if _, err := s.Put(ctx, bytes.NewReader(data), 1000); err != nil {
			t.Fatalf("exactly max: %v", err)
		}
	})

	t.Run("ReaderErrorLeavesNothing", func(t *testing.T) {
		s := newStore(t)
		r := io.MultiReader(strings.NewReader(strings.Repeat("a", 200_000)), errReader{})
		if _, err := s.Put(ctx, r, 0); err == nil {
			t.Fatal("want error from a cut-off reader")
		}
		checkLeftovers(t, s)
	})

	t.Run("CancelledContext", func(t *testing.T) {
		s := newStore(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Put(cctx, strings.NewReader("abc"), 0); err == nil {
			t.Fatal("want error on cancelled context")
		}
		checkLeftovers(t, s)
	})

	t.Run("MissingAndBadKeys", func(t *testing.T) {
		s := newStore(t)
		missing := strings.Repeat("ab", 32)
		for _, key := range []string{missing, "../../etc/passwd", "", "ABCD", strings.Repeat("z", 64)} {
			if _, _, err := s.Open(ctx, key); docflow.ErrorCode(err) != docflow.ENOTFOUND {
				t.Fatalf("open %q: %v, want ENOTFOUND", key, err)
			}
			if _, err := s.Path(ctx, key); docflow.ErrorCode(err) != docflow.ENOTFOUND {
				t.Fatalf("path %q: %v, want ENOTFOUND", key, err)
			}
			if ok, err := s.Exists(ctx, key); ok || err != nil {
				t.Fatalf("exists %q: %v %v", key, ok, err)
			}
			if err := s.Delete(ctx, key); err != nil {
				t.Fatalf("delete %q: %v", key, err)
			}
		}
	})

	t.Run("Delete", func(t *testing.T) {
		s := newStore(t)
		info, err := s.Put(ctx, strings.NewReader("to delete"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, info.Key); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.Exists(ctx, info.Key); ok {
			t.Fatal("still exists")
		}
		if err := s.Delete(ctx, info.Key); err != nil {
			t.Fatalf("second delete: %v", err)
		}
		again, err := s.Put(ctx, strings.NewReader("to delete"), 0)
		if err != nil || !again.Created {
			t.Fatalf("re-put after delete: %+v %v", again, err)
		}
	})
}

func checkLeftovers(t *testing.T, s Store) {
	t.Helper()
	if s.Leftovers != nil {
		if n := s.Leftovers(); n != 0 {
			t.Fatalf("%d incomplete writes left behind", n)
		}
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
