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
