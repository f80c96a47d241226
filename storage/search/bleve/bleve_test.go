package bleve_test

import (
	"testing"

	"docflow"
	"docflow/storage/search/bleve"
	"docflow/storage/search/searchtest"
)

// reopenable lets the contract suite restart the index on the same
// directory.
type reopenable struct {
	docflow.SearchIndex
	dir string
}

func (r *reopenable) Reopen(t *testing.T) docflow.SearchIndex {
	t.Helper()
	if err := r.SearchIndex.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return open(t, r.dir)
}

func open(t *testing.T, dir string) *reopenable {
	t.Helper()
	x, err := bleve.Open(dir, bleve.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { x.Close() })
	return &reopenable{SearchIndex: x, dir: dir}
}

func TestContract(t *testing.T) {
	searchtest.RunContract(t, func(t *testing.T) docflow.SearchIndex {
		return open(t, t.TempDir())
	})
}
