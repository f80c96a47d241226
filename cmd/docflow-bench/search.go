package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"docflow"
	searchbleve "docflow/storage/search/bleve"
)

// searchBenchConfig sizes the search benchmark. The figures are for
// the defaults; smaller values give a quick run.
type searchBenchConfig struct {
	Docs       int // documents indexed
	Dims       int // embedding dimensions
	Clients    int // concurrent searchers
	Queries    int // searches per query kind (split across clients)
	Neighbours int // Nearest calls
	BatchSize  int // documents per Index call
}

func defaultSearchBenchConfig() searchBenchConfig {
	return searchBenchConfig{Docs: 100_000, Dims: 384, Clients: 8, Queries: 4000, Neighbours: 400, BatchSize: 5000}
}

// benchSearchIndex measures the embedded Bleve index with the sizes:
// bulk indexing, searches for one and three common words at 8 concurrent
// clients, Nearest k=5 over every vector, and the process memory with the
// index open. dir is a scratch directory under WORKDIR.
func benchSearchIndex(ctx context.Context, r *Report, dir string) error {
	return benchSearchIndexWith(ctx, r, dir, defaultSearchBenchConfig())
}

// benchSearchIndexWith is benchSearchIndex with explicit sizes.
func benchSearchIndexWith(ctx context.Context, r *Report, dir string, cfg searchBenchConfig) error {
	if cfg.Docs <= 0 || cfg.Dims <= 0 || cfg.Clients <= 0 || cfg.Queries <= 0 || cfg.Neighbours <= 0 || cfg.BatchSize <= 0 {
		return fmt.Errorf("search bench: every size must be positive: %+v", cfg)
	}
	const section = "index"
	path := filepath.Join(dir, "search-bench")
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("search bench: clear %s: %w", path, err)
	}
	defer os.RemoveAll(path)

	// Bulk indexing, the way a reindex from Postgres runs: large Index calls
	// without an fsync per call.
	idx, err := searchbleve.Open(path, searchbleve.Options{Dims: cfg.Dims, NoSync: true})
	if err != nil {
		return fmt.Errorf("search bench: %w", err)
	}
	gen := newSearchDocGen(cfg.Dims)
	// Only the Index calls are timed: generating the corpus is not the
	// index's work.
	var elapsed time.Duration
	var textBytes int
	for lo := 0; lo < cfg.Docs; lo += cfg.BatchSize {
		hi := min(lo+cfg.BatchSize, cfg.Docs)
		docs := make([]*docflow.SearchDocument, 0, hi-lo)
		for i := lo; i < hi; i++ {
			d := gen.doc(int64(i + 1))
			textBytes += len(d.OCRText)
			docs = append(docs, d)
		}
		start := time.Now()
		failed, err := idx.Index(ctx, docs)
		elapsed += time.Since(start)
		if err != nil {
			idx.Close()
			return fmt.Errorf("search bench: index: %w", err)
		}
		if len(failed) > 0 {
			idx.Close()
			return fmt.Errorf("search bench: %d documents failed to index", len(failed))
		}
	}
	// Closing flushes what is still in memory to disk: part of the cost.
	start := time.Now()
	if err := idx.Close(); err != nil {
		return fmt.Errorf("search bench: %w", err)
	}
	elapsed += time.Since(start)
	rate := float64(cfg.Docs) / elapsed.Seconds()
	r.AtLeast(section, fmt.Sprintf("bleve bulk index %d docs (avg %d B text, %d-dim vectors)", cfg.Docs, textBytes/cfg.Docs, cfg.Dims), rate, "docs/s", 2000)

	// Reopen as a server would after a restart: the vectors come back from
	// the log.
	start = time.Now()
	idx, err = searchbleve.Open(path, searchbleve.Options{Dims: cfg.Dims})
	if err != nil {
		return fmt.Errorf("search bench: reopen: %w", err)
	}
	defer idx.Close()
	if n := idx.EmbeddingCount(); n != cfg.Docs {
		return fmt.Errorf("search bench: %d embeddings after reopen, want %d", n, cfg.Docs)
	}
	r.AtMost(section, fmt.Sprintf("bleve reopen with %d vectors", cfg.Docs), float64(time.Since(start).Milliseconds()), "ms", 10_000)

	one := [][]string{{"invoice"}, {"payment"}, {"customer"}, {"total"}, {"contract"}, {"account"}, {"delivery"}, {"order"}}
	three := [][]string{{"invoice", "payment", "total"}, {"customer", "account", "balance"}, {"contract", "delivery", "date"}, {"order", "number", "amount"}}
	for _, kind := range []struct {
		name    string
		queries [][]string
	}{{"one common word", one}, {"three common words", three}} {
		lat, total, err := searchLatencies(ctx, idx, kind.queries, cfg.Clients, cfg.Queries)
		if err != nil {
			return fmt.Errorf("search bench: %s: %w", kind.name, err)
		}
		name := fmt.Sprintf("bleve search %s, %d clients (~%d%% of docs match)", kind.name, cfg.Clients, 100*total/cfg.Docs)
		r.AtMost(section, name+" p50", searchMillis(searchPercentile(lat, 0.50)), "ms", 10)
		r.AtMost(section, name+" p99", searchMillis(searchPercentile(lat, 0.99)), "ms", 50)
	}

	rng := rand.New(rand.NewPCG(7, 7))
	lat := make([]time.Duration, 0, cfg.Neighbours)
	for range cfg.Neighbours {
		id := int64(rng.IntN(cfg.Docs) + 1)
		vec := gen.embedding(id)
		t := time.Now()
		got, err := idx.Nearest(ctx, vec, 5, 0, nil, id)
		lat = append(lat, time.Since(t))
		if err != nil {
			return fmt.Errorf("search bench: nearest: %w", err)
		}
		if len(got) != min(5, cfg.Docs-1) {
			return fmt.Errorf("search bench: nearest returned %d neighbours", len(got))
		}
	}
	r.AtMost(section, fmt.Sprintf("bleve nearest k=5 over %d x %d vectors p50", cfg.Docs, cfg.Dims), searchMillis(searchPercentile(lat, 0.50)), "ms", 25)
	r.AtMost(section, fmt.Sprintf("bleve nearest k=5 over %d x %d vectors p99", cfg.Docs, cfg.Dims), searchMillis(searchPercentile(lat, 0.99)), "ms", 25)

	// Memory with the index open and warmed by the queries above. Garbage
	// from generating the corpus is returned to the OS first so the figure
	// is what a server holds, not what the benchmark allocated.
	runtime.GC()
	debug.FreeOSMemory()
	rss, err := searchSelfRSS()
	if err != nil {
		return fmt.Errorf("search bench: %w", err)
	}
	r.AtMost(section, fmt.Sprintf("process RSS with bleve index of %d docs open", cfg.Docs), float64(rss)/(1<<20), "MiB", 1024)
	return nil
}

// searchLatencies runs n searches split across clients goroutines and returns
// every latency and the total hits of the last query.
func searchLatencies(ctx context.Context, idx docflow.SearchIndex, queries [][]string, clients, n int) ([]time.Duration, int, error) {
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	var total int
	for c := range clients {
		wg.Go(func() {
			for i := c; i < n; i += clients {
				words := queries[i%len(queries)]
				t := time.Now()
				res, err := idx.Search(ctx, docflow.SearchQuery{Text: strings.Join(words, " "), Page: 1, PerPage: 20})
				lat[i] = time.Since(t)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					total = res.Total
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return lat, total, firstErr
}

func searchPercentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func searchMillis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// processRSS reads the resident set size of this process (Linux).
func searchSelfRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read process status: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) < 1 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS: %w", err)
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("VmRSS not found in /proc/self/status")
}

// searchDocGen makes deterministic documents: the same id always gives the same
// text and embedding, so runs are comparable.
type searchDocGen struct {
	dims    int
	words   []string
	cum     []float64 // cumulative Zipf weights over words
	senders []string
	types   []string
	tags    []string
}

func newSearchDocGen(dims int) *searchDocGen {
	// Common business-document words first (they get the highest Zipf
	// weights), then made-up words for a long tail of rare terms, as OCR text
	// has (names, references, misreadings).
	common := strings.Fields(`invoice payment total customer amount date number account order contract
		delivery balance address service tax due period reference please bank item price
		quantity description net gross vat company office phone email terms agreement
		signature page month year report statement receipt insurance policy claim notice
		letter dear regards sincerely department manager product shipping charge discount
		credit debit transfer iban bic subtotal currency euro dollar client supplier vendor
		purchase quote estimate schedule meeting project budget cost expense salary employee
		tenant landlord rent deposit lease property building street city postal country
		doctor patient medical hospital prescription treatment appointment health school
		student course certificate exam registration license vehicle tax return refund`)
	g := &searchDocGen{dims: dims, words: common,
		senders: []string{"Acme GmbH", "Globex Corp", "Initech", "Umbrella plc", "Stadtwerke", "Finanzamt", "Hooli", "Vandelay Industries"},
		types:   []string{"invoice", "contract", "letter", "receipt", "report", "statement"},
		tags:    []string{"finance", "tax", "home", "work", "health", "insurance", "car", "school"},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	syll := []string{"ka", "lo", "mi", "ren", "tos", "vel", "qua", "dri", "ne", "sto", "pa", "lum", "zer", "fi", "gor", "bex"}
	for len(g.words) < 20_000 {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteString(syll[rng.IntN(len(syll))])
		}
		g.words = append(g.words, b.String())
	}
	g.cum = make([]float64, len(g.words))
	var sum float64
	for i := range g.words {
		sum += 1 / math.Pow(float64(i+2), 1.05)
		g.cum[i] = sum
	}
	return g
}

func (g *searchDocGen) word(rng *rand.Rand) string {
	x := rng.Float64() * g.cum[len(g.cum)-1]
	i, _ := slices.BinarySearch(g.cum, x)
	return g.words[min(i, len(g.words)-1)]
}

// doc returns document id with about 2 KB of text and an embedding.
func (g *searchDocGen) doc(id int64) *docflow.SearchDocument {
	rng := rand.New(rand.NewPCG(uint64(id), 42))
	var b strings.Builder
	b.Grow(2200)
	for b.Len() < 1900+rng.IntN(200) {
		n := 6 + rng.IntN(12)
		for i := range n {
			w := g.word(rng)
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			if rng.IntN(12) == 0 {
				b.WriteByte(' ')
				b.WriteString(strconv.Itoa(rng.IntN(100000)))
			}
			if i < n-1 {
				b.WriteByte(' ')
			}
		}
		b.WriteString(". ")
	}
	typ := g.types[rng.IntN(len(g.types))]
	return &docflow.SearchDocument{
		FileID:           id,
		OwnerID:          "user" + strconv.Itoa(rng.IntN(50)),
		OriginalFilename: fmt.Sprintf("%s_%d.pdf", typ, id),
		DocumentTitle:    fmt.Sprintf("%s %s %d", strings.ToUpper(typ[:1])+typ[1:], g.word(rng), id),
		DocumentType:     typ,
		Tags:             []string{g.tags[rng.IntN(len(g.tags))], g.tags[rng.IntN(len(g.tags))]},
		Sender:           g.senders[rng.IntN(len(g.senders))],
		Language:         "en",
		MimeType:         "application/pdf",
		OCRText:          b.String(),
		CreatedAt:        time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(id) * time.Minute),
		Embedding:        g.embedding(id),
	}
}

// embedding is a deterministic pseudo-random vector for id.
func (g *searchDocGen) embedding(id int64) []float32 {
	rng := rand.New(rand.NewPCG(uint64(id), 4242))
	v := make([]float32, g.dims)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}
