package app

import (
	"context"
	"fmt"
	"path/filepath"

	"docflow"
	"docflow/actors/indexer"
	"docflow/storage/postgres"
	searchbleve "docflow/storage/search/bleve"
	"docflow/storage/search/elastic"
)

// OpenSearchIndex opens Elasticsearch when ELASTICSEARCH_URL is set, else
// the embedded Bleve index under WORKDIR/search, and names the backend.
// NOTE: a Bleve directory can be opened by one process only, so with Bleve
// the index (and its indexer) lives in the serve or api process.
func OpenSearchIndex(ctx context.Context, s docflow.SettingsStore, workdir string) (docflow.SearchIndex, string, error) {
	if u := docflow.ElasticsearchURL.Get(s); u != "" {
		dims := docflow.EmbeddingDimensions.Get(s)
		idx, err := elastic.New(ctx, elastic.Config{Addresses: splitList(u), APIKey: docflow.ElasticsearchAPIKey.Get(s), Dims: dims})
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
func (m *App) startSearch(ctx context.Context) error {
	idx, kind, err := OpenSearchIndex(ctx, m.Settings, m.Workdir)
	if err != nil {
		return err
	}
	m.Index = idx
	m.onClose("search index", func(context.Context) error { return idx.Close() })
	m.SearchStore = postgres.NewSearchStore(m.DB)
	icfg := indexer.Config{Actors: m.Actors, Brokers: m.Brokers, Index: idx, Store: m.SearchStore,
		Settings: m.Settings, DeadLetters: m.Producer, Log: m.Log.With().Str("component", "indexer").Logger()}
	if m.cfg.Indexer != nil {
		m.cfg.Indexer(&icfg)
	}
	ix, err := indexer.New(icfg)
	if err != nil {
		return err
	}
	if err := ix.Start(); err != nil {
		return fmt.Errorf("start search indexer: %w", err)
	}
	m.onDrain("search indexer", ix.Close)
	m.Log.Info().Str("backend", kind).Msg("search index open; indexer consuming document events")
	return nil
}
