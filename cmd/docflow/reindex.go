package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"docflow/actors/indexer"
	"docflow/internal/app"
	"docflow/storage/postgres"
)

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
	m, err := app.OpenStore(ctx, app.Config{Role: "reindex", Getenv: os.Getenv, Stderr: stderr, Version: Version}, 8)
	if err != nil {
		return err
	}
	defer m.Close(context.Background()) //nolint:errcheck
	idx, kind, err := app.OpenSearchIndex(ctx, m.Settings, m.Workdir)
	if err != nil {
		return err
	}
	defer idx.Close()
	fmt.Fprintf(stdout, "reindexing into %s…\n", kind)
	start := time.Now()
	stats, err := indexer.Reindex(ctx, postgres.NewSearchStore(m.DB), idx, indexer.ReindexOptions{
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
