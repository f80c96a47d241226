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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	blevesearch "github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search/query"

	"docflow"
)

var _ docflow.SearchIndex = (*Index)(nil)

const (
	// DefaultBatchSize is how many documents go into one bleve batch. Larger
	// batches amortise segment creation and merging; beyond a few thousand
	// the gain is small and the memory per batch grows.
	DefaultBatchSize = 2000
	// DefaultPerPage applies when a query does not say.
	DefaultPerPage = 20
	// MaxPerPage bounds one page; the API allows 100.
	MaxPerPage = 1000

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
}

// Index is the embedded SearchIndex. It is safe for concurrent use; writes
// are serialised, searches run concurrently with them.
type Index struct {
	idx       blevesearch.Index
	vectors   *vectorStore
	text      analysis.Analyzer
	filename  analysis.Analyzer
	batchSize int

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
	config := map[string]any{
		"unsafe_batch": opts.NoSync,
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
		idx:       idx,
		vectors:   vs,
		text:      idx.Mapping().AnalyzerNamed(textAnalyzer),
		filename:  idx.Mapping().AnalyzerNamed(filenameAnalyzer),
		batchSize: opts.BatchSize,
	}
	if x.text == nil || x.filename == nil {
		x.Close()
		return nil, fmt.Errorf("open search index %s: analyzers missing from the stored mapping", path)
	}
	if x.batchSize <= 0 {
		x.batchSize = DefaultBatchSize
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
	dims := x.vectors.dimensions()
	for start := 0; start < len(docs); start += x.batchSize {
		if err := ctx.Err(); err != nil {
			return failed, err
		}
		chunk := docs[start:min(start+x.batchSize, len(docs))]
		b := x.idx.NewBatch()
		var puts []vectorEntry
		var dels []int64
		for _, d := range chunk {
			if d == nil {
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
			if err := b.Index(docID(d.FileID), bleveDoc(d)); err != nil {
				failed[d.FileID] = fmt.Errorf("file %d: %w", d.FileID, err)
				continue
			}
			delete(failed, d.FileID) // a later copy of the same id in this call wins
			if vec != nil {
				puts = append(puts, vectorEntry{id: d.FileID, vec: vec, owner: d.OwnerID, shared: append([]string(nil), d.SharedWith...)})
			} else if x.vectors.has(d.FileID) {
				dels = append(dels, d.FileID)
			}
		}
		if b.Size() > 0 {
			if err := x.idx.Batch(b); err != nil {
				return failed, fmt.Errorf("index batch: %w", err)
			}
		}
		if err := x.vectors.apply(puts, dels); err != nil {
			return failed, fmt.Errorf("index embeddings: %w", err)
		}
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

// Search runs a plain-text query: the text is analysed into words and never
// parsed as query syntax. A text of only punctuation finds nothing; an empty
// text lists every document that passes the filters.
func (x *Index) Search(ctx context.Context, q docflow.SearchQuery) (*docflow.SearchResult, error) {
	if x.closed.Load() {
		return nil, errClosed
	}
	perPage := q.PerPage
	if perPage <= 0 {
		perPage = DefaultPerPage
	}
	perPage = min(perPage, MaxPerPage)
	page := max(q.Page, 1)

	filters, err := filterQueries(q)
	if err != nil {
		return nil, err
	}
	text := strings.TrimSpace(q.Text)
	terms := queryTerms(x.text, text)
	bq := query.NewBooleanQuery(nil, nil, nil)
	if text != "" {
		if len(terms) == 0 && len(queryTerms(x.filename, text)) == 0 {
			return &docflow.SearchResult{Hits: []docflow.SearchHit{}}, nil
		}
		var fields []query.Query
		for _, f := range searchFields() {
			mq := query.NewMatchQuery(text)
			mq.SetField(f.name)
			mq.SetBoost(f.boost)
			fields = append(fields, mq)
		}
		// Must is set directly: AddMust would wrap the one query in a
		// conjunction, one more searcher on every matching document.
		bq.Must = query.NewDisjunctionQuery(fields)
	} else {
		bq.Must = query.NewMatchAllQuery()
	}
	if len(filters) > 0 {
		bq.AddFilter(query.NewConjunctionQuery(filters))
	}

	// Page arithmetic in int64: a huge page number must not overflow into a
	// negative offset.
	from := int64(page-1) * int64(perPage)
	if from > int64(maxFrom) {
		total, err := x.count(ctx, bq)
		if err != nil {
			return nil, err
		}
		return &docflow.SearchResult{Hits: []docflow.SearchHit{}, Total: total}, nil
	}
	req := blevesearch.NewSearchRequestOptions(bq, perPage, int(from), false)
	req.Fields = storedFields()
	res, err := x.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	out := &docflow.SearchResult{Hits: make([]docflow.SearchHit, 0, len(res.Hits)), Total: int(res.Total)}
	for _, h := range res.Hits {
		id, err := strconv.ParseInt(h.ID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("search: document id %q: %w", h.ID, err)
		}
		title := fieldString(h.Fields[fTitle])
		ocr := fieldString(h.Fields[fOCRText])
		out.Hits = append(out.Hits, docflow.SearchHit{
			FileID:           id,
			OriginalFilename: fieldString(h.Fields[fFilename]),
			DocumentTitle:    title,
			DocumentType:     fieldString(h.Fields[fDocumentType]),
			Tags:             fieldStrings(h.Fields[fTags]),
			Score:            h.Score,
			Formatted: map[string]string{
				fTitle:   highlightWhole(x.text, title, terms),
				fOCRText: highlightFragment(x.text, ocr, terms),
			},
		})
	}
	return out, nil
}

// maxFrom bounds the offset handed to bleve, whose collector allocates
// from+size slots: a page far past the end only needs the total.
const maxFrom = 100_000

func (x *Index) count(ctx context.Context, q query.Query) (int, error) {
	req := blevesearch.NewSearchRequestOptions(q, 0, 0, false)
	res, err := x.idx.SearchInContext(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("search: %w", err)
	}
	return int(res.Total), nil
}

func filterQueries(q docflow.SearchQuery) ([]query.Query, error) {
	var out []query.Query
	term := func(field, value string) {
		if value == "" {
			return
		}
		tq := query.NewTermQuery(value)
		tq.SetField(field)
		out = append(out, tq)
	}
	term(fMimeType, q.MimeType)
	term(fDocumentType, q.DocumentType)
	term(fLanguage, q.Language)
	term(fTags, q.Tag)
	term(fSender, q.Sender)
	if q.TextQuality != "" {
		lo, hi, err := qualityBand(q.TextQuality)
		if err != nil {
			return nil, err
		}
		yes := true
		no := false
		var maxp *float64
		if hi > 0 {
			maxp = &hi
		}
		// Bands are [lo, hi); no_text is the single value 0.
		if q.TextQuality == "no_text" {
			nq := query.NewNumericRangeInclusiveQuery(&lo, &lo, &yes, &yes)
			nq.SetField(fTextLength)
			out = append(out, nq)
		} else {
			nq := query.NewNumericRangeInclusiveQuery(&lo, maxp, &yes, &no)
			nq.SetField(fTextLength)
			out = append(out, nq)
		}
	}
	if q.DateFrom != nil || q.DateTo != nil {
		var from, to time.Time
		if q.DateFrom != nil {
			from = q.DateFrom.UTC()
		}
		if q.DateTo != nil {
			to = q.DateTo.UTC()
		}
		yes := true
		dq := query.NewDateRangeInclusiveQuery(from, to, &yes, &yes)
		dq.SetField(fCreatedAt)
		out = append(out, dq)
	}
	if q.VisibleTo != nil {
		owner := query.NewTermQuery(*q.VisibleTo)
		owner.SetField(fOwner)
		shared := query.NewTermQuery(*q.VisibleTo)
		shared.SetField(fSharedWith)
		out = append(out, query.NewDisjunctionQuery([]query.Query{owner, shared}))
	}
	return out, nil
}

// qualityBand maps a text_quality value to its OCR text length band [lo, hi)
// in characters; hi 0 means unbounded.
func qualityBand(name string) (lo, hi float64, err error) {
	switch name {
	case "no_text":
		return 0, 0, nil
	case "low":
		return 1, 500, nil
	case "medium":
		return 500, 2000, nil
	case "high":
		return 2000, 0, nil
	}
	return 0, 0, fmt.Errorf("text quality %q: want no_text, low, medium or high", name)
}

func fieldString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		if len(t) > 0 {
			s, _ := t[0].(string)
			return s
		}
	}
	return ""
}

func fieldStrings(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return []string{}
}

// Nearest returns up to k documents whose embeddings are closest to vec by
// cosine similarity (clamped to [0,1]), best first, with score >= minScore.
func (x *Index) Nearest(ctx context.Context, vec []float32, k int, minScore float64, visibleTo *string, exclude ...int64) ([]docflow.Neighbor, error) {
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
