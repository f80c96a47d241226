package bleve_test

import (
	"testing"
	"time"

	"docflow"
	"docflow/storage/search/bleve"
	"docflow/storage/search/searchtest"
)

// reopenable lets the contract suite restart the index on the same
// directory.
type reopenable struct {
	docflow.SearchIndex
	dir  string
	opts bleve.Options
}

func (r *reopenable) Reopen(t *testing.T) docflow.SearchIndex {
	t.Helper()
	if err := r.SearchIndex.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openWith(t, r.dir, r.opts)
}

func open(t *testing.T, dir string) *reopenable {
	return openWith(t, dir, bleve.Options{})
}

func openWith(t *testing.T, dir string, opts bleve.Options) *reopenable {
	t.Helper()
	x, err := bleve.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { x.Close() })
	return &reopenable{SearchIndex: x, dir: dir, opts: opts}
}

func TestContract(t *testing.T) {
	searchtest.RunContract(t, func(t *testing.T) docflow.SearchIndex {
		return open(t, t.TempDir())
	})
}

// TestContractTiered runs the suite with every query treated as broad, so the
// tiered ranking passes the same contract as exact scoring.
func TestContractTiered(t *testing.T) {
	searchtest.RunContract(t, func(t *testing.T) docflow.SearchIndex {
		return openWith(t, t.TempDir(), bleve.Options{ExactLimit: 1})
	})
}

// TestOpenInUseFails: a directory another Open holds (another process, in
// production) fails the second Open after LockTimeout, instead of leaving
// it waiting for ever.
func TestOpenInUseFails(t *testing.T) {
	dir := t.TempDir()
	open(t, dir)
	done := make(chan error, 1)
	go func() {
		x, err := bleve.Open(dir, bleve.Options{LockTimeout: 100 * time.Millisecond})
		if err == nil {
			x.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a second Open of a directory in use succeeded")
		}
	case <-time.After(time.Minute):
		t.Fatal("a second Open of a directory in use still waits after a minute")
	}
}
