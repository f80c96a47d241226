package blobtest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"docflow/storage/blob"
)

// PutAged stores data in l as if it had been written ago (its file's
// modification time set back), for tests of what sweeps old blobs, and
// returns its key.
func PutAged(t testing.TB, l *blob.Local, data string, ago time.Duration) string {
	t.Helper()
	info, err := l.Put(context.Background(), strings.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.Path(context.Background(), info.Key)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-ago)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	return info.Key
}

// Exists reports whether l holds key (or fails the test).
func Exists(t testing.TB, l *blob.Local, key string) bool {
	t.Helper()
	ok, err := l.Exists(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}
