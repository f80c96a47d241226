// Package bleve is the embedded search index: full-text search with Bleve
// (scorch, on disk) and exact cosine k-nearest-neighbour search over
// embeddings held in memory and persisted in a side log.
package bleve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	blevesearch "github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"docflow"
)

var _ docflow.SearchIndex = (*Index)(nil)

const (
	// DefaultBatchSize is how many documents go into one bleve batch. Larger
	// batches amortise segment creation and merging; beyond a few thousand
	// the gain is small and the memory per batch grows.
	DefaultBatchSize = 2000

	indexDirName  = "bleve"
	vectorLogName = "vectors.log"
)

// Options tune the index. The zero value is a durable index whose embedding
// dimension is taken from the first vector.
type Options struct {
	// Dims fixes the embedding dimension; 0 takes it from the first vector
	// indexed (or from the vectors already on disk).
	Dims int
	// NoSync makes Index and Delete return once changes are searchable,
	// before they are flushed to disk. A crash can then lose the last
	// writes, which a reindex from Postgres restores. Use it for bulk loads.
	NoSync bool
	// BatchSize is the number of documents per bleve batch (DefaultBatchSize
	// when 0).
	BatchSize int
	// ExactLimit is the number of matches up to which a query scores every
	// match (DefaultExactLimit when 0); broader queries are ranked in tiers.
	// See Search.
	ExactLimit int
	// TotalCap bounds the count of a broad query (DefaultTotalCap when 0).
	TotalCap int
	// LockTimeout bounds the wait for the index's lock, held by another
	// process that has the directory open (DefaultLockTimeout when 0):
	// Open then fails instead of waiting for ever.
	LockTimeout time.Duration
}

// DefaultLockTimeout is Options.LockTimeout's default.
const DefaultLockTimeout = 10 * time.Second

// Index is the embedded SearchIndex. It is safe for concurrent use; writes
// are serialised, searches run concurrently with them.
type Index struct {
	idx        blevesearch.Index
	vectors    *vectorStore
	text       analysis.Analyzer
	filename   analysis.Analyzer
	batchSize  int
	exactLimit int
	totalCap   int

	// searchSlots admits one search per core at a time; see Search.
	searchSlots chan struct{}

	// writeMu orders writes so that the text index and the vector log apply
	// concurrent updates of one document in the same order.
	writeMu sync.Mutex
	closed  atomic.Bool
}

// Open opens the index in dir, creating it when it does not exist.
func Open(dir string, opts Options) (*Index, error) {
	if dir == "" {
		return nil, errors.New("open search index: empty directory")
	}
	if opts.Dims < 0 {
		return nil, fmt.Errorf("open search index: negative dimensions %d", opts.Dims)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open search index: %w", err)
	}
	lock := opts.LockTimeout
	if lock <= 0 {
		lock = DefaultLockTimeout
	}
	config := map[string]any{
		"unsafe_batch": opts.NoSync,
		"bolt_timeout": lock.String(),
	}
	path := filepath.Join(dir, indexDirName)
	var idx blevesearch.Index
	if _, err := os.Stat(filepath.Join(path, "index_meta.json")); err == nil {
		idx, err = blevesearch.OpenUsing(path, config)
		if err != nil {
			return nil, fmt.Errorf("open search index %s: %w", path, err)
		}
	} else {
		m, err := newMapping()
		if err != nil {
			return nil, err
		}
		idx, err = blevesearch.NewUsing(path, m, scorch.Name, scorch.Name, config)
		if err != nil {
			return nil, fmt.Errorf("create search index %s: %w", path, err)
		}
	}
	vs, err := openVectorStore(filepath.Join(dir, vectorLogName), opts.Dims, !opts.NoSync)
	if err != nil {
		idx.Close()
		return nil, err
	}
	x := &Index{
		idx:         idx,
		vectors:     vs,
		text:        idx.Mapping().AnalyzerNamed(textAnalyzer),
		filename:    idx.Mapping().AnalyzerNamed(filenameAnalyzer),
		searchSlots: make(chan struct{}, runtime.GOMAXPROCS(0)),
		batchSize:   opts.BatchSize,
		exactLimit:  opts.ExactLimit,
		totalCap:    opts.TotalCap,
	}
	if x.text == nil || x.filename == nil {
		x.Close()
		return nil, fmt.Errorf("open search index %s: analyzers missing from the stored mapping", path)
	}
	if x.batchSize <= 0 {
		x.batchSize = DefaultBatchSize
	}
	if x.exactLimit <= 0 {
		x.exactLimit = DefaultExactLimit
	}
	if x.totalCap <= 0 {
		x.totalCap = DefaultTotalCap
	}
	return x, nil
}

var errClosed = errors.New("search index closed")

// Index adds or replaces documents. A document without an embedding loses
// any embedding it had. Per-document problems (bad id, embedding of the
// wrong dimension or zero length) are returned in the map; the others are
// indexed.
func (x *Index) Index(ctx context.Context, docs []*docflow.SearchDocument) (map[int64]error, error) {
	failed := make(map[int64]error)
	if x.closed.Load() {
		return failed, errClosed
	}
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if x.closed.Load() {
		return failed, errClosed
	}

	// A document given twice in one call: the last copy wins. Dropping the
	// earlier copies first lets the batches below run in parallel without
	// racing on one id.
	last := make(map[int64]int, len(docs))
	for i, d := range docs {
		if d != nil {
			last[d.FileID] = i
		}
	}
	type prepared struct {
		d   *docflow.SearchDocument
		vec []float32
		err error
	}
	dims := x.vectors.dimensions()
	ready := make([]prepared, 0, len(docs))
	for i, d := range docs {
		if d == nil || last[d.FileID] != i {
			continue
		}
		if d.FileID <= 0 {
			failed[d.FileID] = fmt.Errorf("file id %d: not positive", d.FileID)
			continue
		}
		var vec []float32
		if len(d.Embedding) > 0 {
			if dims == 0 {
				dims = len(d.Embedding)
			}
			if len(d.Embedding) != dims {
				failed[d.FileID] = fmt.Errorf("file %d: embedding has %d dimensions, index has %d", d.FileID, len(d.Embedding), dims)
				continue
			}
			v, err := normalize(d.Embedding)
			if err != nil {
				failed[d.FileID] = fmt.Errorf("file %d: %w", d.FileID, err)
				continue
			}
			vec = v
		}
		ready = append(ready, prepared{d: d, vec: vec})
	}

	// Bleve analyses a batch on several goroutines but builds its segment on
	// one, about half the work; batches on every core in parallel use the
	// other cores for that half too.
	var chunks [][]prepared
	for start := 0; start < len(ready); start += x.batchSize {
		chunks = append(chunks, ready[start:min(start+x.batchSize, len(ready))])
	}
	var next atomic.Int64
	errs := make([]error, len(chunks))
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(chunks)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(chunks) {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[i] = err
					return
				}
				b := x.idx.NewBatch()
				for k := range chunks[i] {
					p := &chunks[i][k]
					if err := b.Index(docID(p.d.FileID), bleveDoc(p.d)); err != nil {
						p.err = fmt.Errorf("file %d: %w", p.d.FileID, err)
					}
				}
				if err := x.idx.Batch(b); err != nil {
					errs[i] = fmt.Errorf("index batch: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return failed, err
		}
	}

	var puts []vectorEntry
	var dels []int64
	for _, p := range ready {
		switch {
		case p.err != nil:
			failed[p.d.FileID] = p.err
		case p.vec != nil:
			puts = append(puts, vectorEntry{id: p.d.FileID, vec: p.vec, owner: p.d.OwnerID, shared: append([]string(nil), p.d.SharedWith...)})
		case x.vectors.has(p.d.FileID):
			dels = append(dels, p.d.FileID)
		}
	}
	if err := x.vectors.apply(puts, dels); err != nil {
		return failed, fmt.Errorf("index embeddings: %w", err)
	}
	return failed, nil
}

// Delete removes documents; unknown ids are ignored.
func (x *Index) Delete(ctx context.Context, ids []int64) error {
	if x.closed.Load() {
		return errClosed
	}
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if x.closed.Load() {
		return errClosed
	}
	for start := 0; start < len(ids); start += x.batchSize {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := ids[start:min(start+x.batchSize, len(ids))]
		b := x.idx.NewBatch()
		var dels []int64
		for _, id := range chunk {
			b.Delete(docID(id))
			if x.vectors.has(id) {
				dels = append(dels, id)
			}
		}
		if err := x.idx.Batch(b); err != nil {
			return fmt.Errorf("delete batch: %w", err)
		}
		if err := x.vectors.apply(nil, dels); err != nil {
			return fmt.Errorf("delete embeddings: %w", err)
		}
	}
	return nil
}

// Nearest returns up to k documents whose embeddings are closest to vec by
// cosine similarity (clamped to [0,1]), best first, with score >= minScore.
func (x *Index) Nearest(ctx context.Context, vec []float32, k int, minScore float64, visibleTo *docflow.Visibility, exclude ...int64) ([]docflow.Neighbor, error) {
	if x.closed.Load() {
		return nil, errClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := x.vectors.nearest(vec, k, minScore, visibleTo, exclude)
	if err != nil {
		return nil, fmt.Errorf("nearest: %w", err)
	}
	return out, nil
}

// Ping reports whether the index is open and readable.
func (x *Index) Ping(ctx context.Context) error {
	if x.closed.Load() {
		return errClosed
	}
	if _, err := x.idx.DocCount(); err != nil {
		return fmt.Errorf("ping search index: %w", err)
	}
	return nil
}

// DocCount returns the number of documents in the text index.
func (x *Index) DocCount() (uint64, error) {
	n, err := x.idx.DocCount()
	if err != nil {
		return 0, fmt.Errorf("count documents: %w", err)
	}
	return n, nil
}

// EmbeddingCount returns the number of documents with an embedding.
func (x *Index) EmbeddingCount() int { return x.vectors.len() }

// Close flushes and closes the index. Calls after the first are no-ops.
func (x *Index) Close() error {
	if x.closed.Swap(true) {
		return nil
	}
	// Wait for a running write so it is not cut off halfway.
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	err := x.idx.Close()
	if verr := x.vectors.close(); err == nil {
		err = verr
	}
	if err != nil {
		return fmt.Errorf("close search index: %w", err)
	}
	return nil
}
