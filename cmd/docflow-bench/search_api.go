package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"docflow"
	"docflow/actors/indexer"
	"docflow/internal/app/apptest"
	"docflow/storage/postgres"
	searchbleve "docflow/storage/search/bleve"
)

// searchAPIBenchConfig sizes the API-level search benchmark.
type searchAPIBenchConfig struct {
	Docs          int           // files in Postgres and documents in the index
	Dims          int           // embedding dimensions
	PairsPerDoc   int           // similarity pairs stored per document
	Clients       int           // concurrent clients of the search figures
	Duration      time.Duration // measured time of each load run
	ReindexBatch  int           // files per reindex step
	SimilarLimit  int           // limit of GET /similar
	PairsMaxPages int           // pages of GET /similarity/pairs visited
}

func defaultSearchAPIBenchConfig() searchAPIBenchConfig {
	return searchAPIBenchConfig{Docs: 100_000, Dims: 384, PairsPerDoc: 2, Clients: 8, Duration: 8 * time.Second,
		ReindexBatch: 2000, SimilarLimit: 5, PairsMaxPages: 20}
}

// benchSearchAPI measures the search endpoints through the HTTP server
// with 100,000 generated documents (about 2 KB of text, 384-dimension
// vectors) in Postgres and the embedded Bleve index: the reindex from
// Postgres, GET /api/search for one and three common words at 8 clients,
// GET /api/files/{id}/similar?limit=5, GET /api/similarity/pairs, and the
// process memory with the index open.
func benchSearchAPI(ctx context.Context, r *Report) error {
	return benchSearchAPIWith(ctx, r, defaultSearchAPIBenchConfig())
}

// benchSearchAPIWith is benchSearchAPI with explicit sizes.
func benchSearchAPIWith(ctx context.Context, r *Report, cfg searchAPIBenchConfig) error {
	if cfg.Docs <= 1 || cfg.Dims <= 0 || cfg.Clients <= 0 || cfg.Duration <= 0 || cfg.ReindexBatch <= 0 || cfg.SimilarLimit <= 0 {
		return fmt.Errorf("search api bench: sizes must be positive: %+v", cfg)
	}
	const section = "search-api"
	dir, err := os.MkdirTemp("", "docflow-bench-search-api-")
	if err != nil {
		return fmt.Errorf("search api bench: %w", err)
	}
	defer os.RemoveAll(dir)

	dbURL, dropDB, err := benchDB(ctx, "search_api")
	if err != nil {
		return fmt.Errorf("search api bench: %w", err)
	}
	defer dropDB()
	db, err := postgres.Open(ctx, dbURL, 32)
	if err != nil {
		return fmt.Errorf("search api bench: %w", err)
	}
	defer db.Close()

	gen := newSearchDocGen(cfg.Dims)
	start := time.Now()
	if err := loadSearchBenchRows(ctx, db, gen, cfg); err != nil {
		return fmt.Errorf("search api bench: load Postgres: %w", err)
	}
	fmt.Printf("   loaded %d files, embeddings and pairs into Postgres in %s\n", cfg.Docs, time.Since(start).Round(time.Millisecond))

	// Build the index the way `docflow reindex` does, then reopen it as a
	// server would.
	store := postgres.NewSearchStore(db)
	path := dir + "/search"
	bulk, err := searchbleve.Open(path, searchbleve.Options{Dims: cfg.Dims, NoSync: true})
	if err != nil {
		return fmt.Errorf("search api bench: %w", err)
	}
	st, err := indexer.Reindex(ctx, store, bulk, indexer.ReindexOptions{BatchSize: cfg.ReindexBatch, Log: zerolog.Nop()})
	if cerr := bulk.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("search api bench: reindex: %w", err)
	}
	if st.Indexed != cfg.Docs {
		return fmt.Errorf("search api bench: reindexed %d of %d documents (%d refused)", st.Indexed, cfg.Docs, st.Failed)
	}
	r.AtLeast(section, fmt.Sprintf("reindex %d docs from Postgres into bleve", cfg.Docs), float64(st.Indexed)/st.Duration.Seconds(), "docs/s", 2000)
	// A docflow api process on that database reopens the index under its
	// WORKDIR, as a server would; the baselines ask the same index.
	log := zerolog.Nop()
	a, err := apptest.Start(ctx, apptest.Options{Role: "api", Log: &log, DB: db, Workdir: dir, ProductionTimings: true,
		Env: map[string]string{"RATE_LIMITING_ENABLED": "false", "AUTH_ENABLED": "false"}})
	if err != nil {
		return fmt.Errorf("search api bench: %w", err)
	}
	defer a.Close()
	url, idx := a.URL, a.Index

	one := []string{"invoice", "payment", "customer", "total", "contract", "account", "delivery", "order"}
	three := []string{"invoice payment total", "customer account balance", "contract delivery date", "order number amount"}
	for _, kind := range []struct {
		name    string
		queries []string
	}{{"one common word", one}, {"three common words", three}} {
		queries := kind.queries
		// Warm the index first (a reopened index reads its segments on
		// first use), then the baseline: the same queries straight to the
		// index with the same clients; then the API.
		if _, _, err := searchBenchDirect(ctx, idx, queries, cfg.Clients, 2*time.Second); err != nil {
			return fmt.Errorf("search api bench: %w", err)
		}
		p50, p99, err := searchBenchDirect(ctx, idx, queries, cfg.Clients, cfg.Duration)
		if err != nil {
			return fmt.Errorf("search api bench: %w", err)
		}
		var n atomic.Int64
		res, err := load(ctx, url+"/api/search", cfg.Clients, cfg.Duration, func(req *fasthttp.Request) {
			q := queries[int(n.Add(1))%len(queries)]
			req.SetRequestURI(url + "/api/search?q=" + strings.ReplaceAll(q, " ", "+"))
		})
		if err != nil {
			return fmt.Errorf("search api bench: search %s: %w", kind.name, err)
		}
		total, err := searchBenchTotal(url + "/api/search?q=" + strings.ReplaceAll(queries[0], " ", "+"))
		if err != nil {
			return fmt.Errorf("search api bench: %w", err)
		}
		name := fmt.Sprintf("GET /api/search %s, %d clients (%d hits)", kind.name, cfg.Clients, total)
		r.Add(Row{Section: section, Name: name + " p50", Value: millis(res.P50), Unit: "ms", Baseline: millis(p50),
			Target: "<= 10 ms", Pass: millis(res.P50) <= 10})
		r.Add(Row{Section: section, Name: name + " p99", Value: millis(res.P99), Unit: "ms", Baseline: millis(p99),
			Target: "<= 50 ms", Pass: millis(res.P99) <= 50})
	}

	// Similar and pairs: latency of one client at a time (each similar
	// request already scans every vector on all cores).
	// Baseline: Nearest on the index for the same kind of request.
	seq := rand.New(rand.NewPCG(11, 13))
	gen2 := newSearchDocGen(cfg.Dims)
	var near []time.Duration
	for end := time.Now().Add(cfg.Duration); time.Now().Before(end); {
		id := int64(seq.IntN(cfg.Docs) + 1)
		t := time.Now()
		if _, err := idx.Nearest(ctx, gen2.embedding(id), cfg.SimilarLimit+5, 0, nil, id); err != nil {
			return fmt.Errorf("search api bench: nearest: %w", err)
		}
		near = append(near, time.Since(t))
	}
	slices.Sort(near)
	simURL := fmt.Sprintf("%s/api/files/1/similar?limit=%d", url, cfg.SimilarLimit)
	res, err := load(ctx, simURL, 1, cfg.Duration, func(req *fasthttp.Request) {
		id := seq.IntN(cfg.Docs) + 1
		req.SetRequestURI(fmt.Sprintf("%s/api/files/%d/similar?limit=%d&threshold=0", url, id, cfg.SimilarLimit))
	})
	if err != nil {
		return fmt.Errorf("search api bench: similar: %w", err)
	}
	r.Add(Row{Section: section, Name: fmt.Sprintf("GET /api/files/{id}/similar?limit=%d over %d x %d vectors p99", cfg.SimilarLimit, cfg.Docs, cfg.Dims),
		Value: millis(res.P99), Unit: "ms", Baseline: millis(near[len(near)*99/100]), Target: "<= 25 ms", Pass: millis(res.P99) <= 25})

	pseq := rand.New(rand.NewPCG(17, 19))
	res, err = load(ctx, url+"/api/similarity/pairs", 1, cfg.Duration, func(req *fasthttp.Request) {
		page := pseq.IntN(max(cfg.PairsMaxPages, 1)) + 1
		req.SetRequestURI(fmt.Sprintf("%s/api/similarity/pairs?page=%d", url, page))
	})
	if err != nil {
		return fmt.Errorf("search api bench: pairs: %w", err)
	}
	pairs, err := db.SimilarityPairCount(ctx)
	if err != nil {
		return fmt.Errorf("search api bench: %w", err)
	}
	r.AtMost(section, fmt.Sprintf("GET /api/similarity/pairs (%d stored pairs) p99", pairs), millis(res.P99), "ms", 20)

	runtime.GC()
	debug.FreeOSMemory()
	rss, err := searchSelfRSS()
	if err != nil {
		return fmt.Errorf("search api bench: %w", err)
	}
	r.AtMost(section, fmt.Sprintf("process RSS with the API serving a %d-doc index", cfg.Docs), float64(rss)/(1<<20), "MiB", 1024)
	return nil
}

// loadSearchBenchRows writes the generated files (completed, with OCR text
// and AI metadata), their embeddings and PairsPerDoc similarity pairs per
// file with COPY.
func loadSearchBenchRows(ctx context.Context, db *postgres.DB, gen *searchDocGen, cfg searchAPIBenchConfig) error {
	const chunk = 5000
	for lo := 1; lo <= cfg.Docs; lo += chunk {
		hi := min(lo+chunk-1, cfg.Docs)
		files := make([][]any, 0, hi-lo+1)
		embs := make([][]any, 0, hi-lo+1)
		for id := lo; id <= hi; id++ {
			d := gen.doc(int64(id))
			meta, err := json.Marshal(map[string]any{"title": d.DocumentTitle, "document_type": d.DocumentType,
				"sender": d.Sender, "tags": d.Tags, "language": d.Language})
			if err != nil {
				return err
			}
			files = append(files, []any{int64(id), fmt.Sprintf("%064x", id), d.OriginalFilename, fmt.Sprintf("%d.pdf", id),
				int64(len(d.OCRText)), d.MimeType, docflow.StatusCompleted, d.OCRText, d.DocumentTitle, string(meta), d.Tags,
				d.Language, d.CreatedAt, d.CreatedAt})
			embs = append(embs, []any{int64(id), cfg.Dims, "bench", d.Embedding})
		}
		if err := db.CopyBenchRows(ctx, "files", []string{"id", "filehash", "original_filename", "stored_filename",
			"file_size", "mime_type", "status", "ocr_text", "document_title", "ai_metadata", "tags", "language", "created_at", "updated_at"},
			files); err != nil {
			return fmt.Errorf("copy files: %w", err)
		}
		if err := db.CopyBenchRows(ctx, "file_embeddings", []string{"file_id", "dimensions", "model", "vector"}, embs); err != nil {
			return fmt.Errorf("copy embeddings: %w", err)
		}
	}
	if err := db.SetFileIDSequence(ctx, cfg.Docs); err != nil {
		return err
	}
	// Pairs: random partners with scores spread over [0.5, 1), as the
	// indexer stores them above the default SIMILARITY_PAIR_THRESHOLD.
	rng := rand.New(rand.NewPCG(3, 5))
	seen := make(map[[2]int64]bool, cfg.Docs*cfg.PairsPerDoc)
	var rows [][]any
	for id := 1; id <= cfg.Docs; id++ {
		for range cfg.PairsPerDoc {
			other := rng.IntN(cfg.Docs) + 1
			if other == id {
				continue
			}
			k := [2]int64{int64(min(id, other)), int64(max(id, other))}
			if seen[k] {
				continue
			}
			seen[k] = true
			rows = append(rows, []any{k[0], k[1], postgres.RoundScore(0.5 + rng.Float64()/2)})
		}
	}
	if err := db.CopyBenchRows(ctx, "similarity_pairs", []string{"file_a", "file_b", "score"}, rows); err != nil {
		return fmt.Errorf("copy pairs: %w", err)
	}
	return db.AnalyzeSearchTables(ctx)
}

// searchBenchTotal returns the total of one search, to show how many
// documents the measured queries match.
func searchBenchTotal(url string) (int, error) {
	status, body, err := fasthttp.Get(nil, url)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	if status != 200 {
		return 0, fmt.Errorf("GET %s: status %d: %.200s", url, status, body)
	}
	var m struct {
		Total   int               `json:"total"`
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	if len(m.Results) == 0 {
		return 0, errors.New("GET " + url + ": no results")
	}
	return m.Total, nil
}

// searchBenchDirect runs the queries against the index itself with the
// same number of clients for d and returns p50 and p99: the baseline the
// HTTP figures are printed beside.
func searchBenchDirect(ctx context.Context, idx docflow.SearchIndex, queries []string, clients int, d time.Duration) (time.Duration, time.Duration, error) {
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := c; time.Now().Before(deadline); i += clients {
				t := time.Now()
				_, err := idx.Search(ctx, docflow.SearchQuery{Text: queries[i%len(queries)], Page: 1, PerPage: 20})
				if err != nil {
					errs[c] = err
					return
				}
				lat[c] = append(lat[c], time.Since(t))
			}
		})
	}
	wg.Wait()
	var all []time.Duration
	for c := range clients {
		if errs[c] != nil {
			return 0, 0, fmt.Errorf("direct search: %w", errs[c])
		}
		all = append(all, lat[c]...)
	}
	if len(all) == 0 {
		return 0, 0, errors.New("direct search: no queries ran")
	}
	slices.Sort(all)
	return all[len(all)/2], all[len(all)*99/100], nil
}
