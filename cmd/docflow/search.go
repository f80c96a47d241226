package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"docflow"
	"docflow/actors/indexer"
	"docflow/storage/postgres"
	searchbleve "docflow/storage/search/bleve"
	"docflow/storage/search/elastic"
)

// openSearchIndex opens Elasticsearch when ELASTICSEARCH_URL is set, else
// the embedded Bleve index under WORKDIR/search. NOTE: a Bleve directory
// can be opened by one process only, so with Bleve the index (and its
// indexer) lives in the serve or api process.
func openSearchIndex(ctx context.Context, s docflow.SettingsService, workdir string) (docflow.SearchIndex, string, error) {
	if u := s.Get("ELASTICSEARCH_URL"); u != "" {
		dims := docflow.SettingInt(s, "EMBEDDING_DIMENSIONS", 384)
		idx, err := elastic.New(ctx, elastic.Config{Addresses: splitList(u), APIKey: s.Get("ELASTICSEARCH_API_KEY"), Dims: dims})
		if err != nil {
			return nil, "", fmt.Errorf("connect Elasticsearch at %s: %w (unset ELASTICSEARCH_URL to use the embedded index)", u, err)
		}
		return idx, "elasticsearch", nil
	}
	dir := filepath.Join(workdir, "search")
	idx, err := searchbleve.Open(dir, searchbleve.Options{})
	if err != nil {
		return nil, "", fmt.Errorf("open search index %s: %w (is another docflow process using it? with the embedded index only one serve or api process may run; use ELASTICSEARCH_URL for more)", dir, err)
	}
	return idx, "bleve", nil
}

// startSearch opens the index and starts the indexer (serve and api).
func (m *Main) startSearch(ctx context.Context) error {
	idx, kind, err := openSearchIndex(ctx, m.Settings, m.Workdir)
	if err != nil {
		return err
	}
	m.Index = idx
	m.onClose(func(context.Context) error { return idx.Close() })
	m.SearchStore = postgres.NewSearchService(m.DB)
	ix, err := indexer.New(indexer.Config{Brokers: m.Brokers, Index: idx, Store: m.SearchStore,
		Settings: m.Settings, DeadLetters: m.Producer, Log: m.Log.With().Str("component", "indexer").Logger()})
	if err != nil {
		return err
	}
	if err := ix.Start(); err != nil {
		return fmt.Errorf("start search indexer: %w", err)
	}
	m.onClose(ix.Close)
	m.Log.Info().Str("backend", kind).Msg("search index open; indexer consuming document events")
	return nil
}

func runReindex(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reindex", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pairs := fs.Bool("pairs", false, "also recompute every document's similarity pairs")
	batch := fs.Int("batch", 0, "documents per batch (default SEARCH_INDEXER_BATCH)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: docflow reindex [flags]

Rebuilds the search index from PostgreSQL: every completed document is indexed
again (with its embedding) and ids of deleted documents are removed. With the
embedded index (ELASTICSEARCH_URL empty) stop docflow first: only one process
may open it.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	m := &Main{Role: "reindex", Getenv: os.Getenv, Stdout: stdout, Stderr: stderr}
	defer m.Close(context.Background()) //nolint:errcheck
	if _, err := m.openStore(ctx, 8); err != nil {
		return err
	}
	idx, kind, err := openSearchIndex(ctx, m.Settings, m.Workdir)
	if err != nil {
		return err
	}
	defer idx.Close()
	fmt.Fprintf(stdout, "reindexing into %s…\n", kind)
	start := time.Now()
	stats, err := indexer.Reindex(ctx, postgres.NewSearchService(m.DB), idx, indexer.ReindexOptions{
		BatchSize: *batch, Pairs: *pairs, Settings: m.Settings, Log: m.Log,
		Progress: func(s indexer.ReindexStats) {
			fmt.Fprintf(stdout, "\r  %d indexed, %d removed, %d failed (%s)", s.Indexed, s.Removed, s.Failed, time.Since(start).Round(time.Second))
		},
	})
	fmt.Fprintln(stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "done: %d documents indexed, %d ids removed, %d refused, %d pair sets recomputed in %s\n",
		stats.Indexed, stats.Removed, stats.Failed, stats.Pairs, strings.TrimSpace(stats.Duration.Round(time.Millisecond).String()))
	return nil
}
