package indexer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"docflow"
)

// ReindexStore is what a rebuild reads (postgres.SearchStore).
type ReindexStore interface {
	Store
	// ScanSearchDocuments reads the next limit files after afterID and
	// returns the completed ones' documents and the highest id read.
	ScanSearchDocuments(ctx context.Context, afterID int64, limit int) ([]*docflow.SearchDocument, int64, error)
	// MaxFileID is the highest file id ever handed out.
	MaxFileID(ctx context.Context) (int64, error)
}

// ReindexOptions tune a rebuild.
type ReindexOptions struct {
	// BatchSize is the files read and indexed per step; 0 =
	// SEARCH_INDEXER_BATCH (200) when Settings is set, else 500.
	BatchSize int
	// Pairs also recomputes every document's similarity pairs (one
	// nearest-neighbour scan per document with an embedding). Postgres
	// keeps the pairs, so a rebuild of the index alone does not need it.
	Pairs    bool
	Settings docflow.SettingsStore // SIMILARITY_PAIR_* (and the batch size); optional
	Log      zerolog.Logger
	// Progress, when set, is called after each batch.
	Progress func(ReindexStats)
}

// ReindexStats counts what a rebuild did.
type ReindexStats struct {
	Indexed  int // documents written
	Removed  int // ids cleared from the index (files deleted or not completed)
	Failed   int // documents the index refused (logged)
	Pairs    int // documents whose pairs were recomputed
	Duration time.Duration
}

// Reindex rebuilds the search index from Postgres: it walks every file by
// id in batches, indexes the completed ones (with their embeddings and
// shares) and removes every other id up to the highest ever handed out, so
// documents of deleted or unfinished files disappear too. Documents the
// index refuses are logged and counted, not fatal. It is safe to run while
// the indexer runs (both write the current state of Postgres).
func Reindex(ctx context.Context, store ReindexStore, index docflow.SearchIndex, opts ReindexOptions) (ReindexStats, error) {
	start := time.Now()
	var st ReindexStats
	if store == nil || index == nil {
		return st, errors.New("reindex: nil store or index")
	}
	size := opts.BatchSize
	if size <= 0 && opts.Settings != nil {
		size = docflow.SearchIndexerBatch.Get(opts.Settings)
	}
	if size <= 0 {
		size = 500
	}
	maxID, err := store.MaxFileID(ctx)
	if err != nil {
		return st, fmt.Errorf("reindex: %w", err)
	}
	// The next batch is read from Postgres while the index takes the
	// current one.
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	batches := scanAhead(sctx, store, size)
	var after int64
	for {
		var b scanned
		select {
		case b = <-batches:
		case <-ctx.Done():
			return st, ctx.Err()
		}
		if b.err != nil {
			return st, fmt.Errorf("reindex after file %d: %w", after, b.err)
		}
		docs, last := b.docs, b.last
		if last == 0 {
			break
		}
		present := make(map[int64]bool, len(docs))
		for _, d := range docs {
			present[d.FileID] = true
		}
		if len(docs) > 0 {
			failed, err := index.Index(ctx, docs)
			if err != nil {
				return st, fmt.Errorf("reindex files %d..%d: %w", after+1, last, err)
			}
			for id, e := range failed {
				opts.Log.Warn().Err(e).Int64("file_id", id).Msg("reindex: document refused")
			}
			st.Failed += len(failed)
			st.Indexed += len(docs) - len(failed)
		}
		if err := removeGaps(ctx, index, after+1, last, present, &st); err != nil {
			return st, err
		}
		after = last
		if opts.Progress != nil {
			opts.Progress(st)
		}
	}
	// Files deleted after the last one that still exists.
	if maxID > after {
		if err := removeGaps(ctx, index, after+1, maxID, nil, &st); err != nil {
			return st, err
		}
	}
	if opts.Pairs {
		if err := reindexPairs(ctx, store, index, size, opts, &st); err != nil {
			return st, err
		}
	}
	st.Duration = time.Since(start)
	opts.Log.Info().Int("indexed", st.Indexed).Int("removed", st.Removed).Int("failed", st.Failed).
		Int("pairs", st.Pairs).Dur("took", st.Duration).Msg("reindex done")
	return st, nil
}

// scanned is one batch read by scanAhead; last 0 ends the scan.
type scanned struct {
	docs []*docflow.SearchDocument
	last int64
	err  error
}

// scanAhead reads batches in id order into a channel that holds one batch
// beyond the one being indexed. It stops after the last batch, an error,
// or when ctx is done.
func scanAhead(ctx context.Context, store ReindexStore, size int) <-chan scanned {
	ch := make(chan scanned, 1)
	go func() {
		var after int64
		for {
			docs, last, err := store.ScanSearchDocuments(ctx, after, size)
			select {
			case ch <- scanned{docs: docs, last: last, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil || last == 0 {
				return
			}
			after = last
		}
	}()
	return ch
}

// removeGaps deletes the ids in [lo, hi] that are not present.
func removeGaps(ctx context.Context, index docflow.SearchIndex, lo, hi int64, present map[int64]bool, st *ReindexStats) error {
	const chunk = 5000
	var ids []int64
	flush := func() error {
		if len(ids) == 0 {
			return nil
		}
		if err := index.Delete(ctx, ids); err != nil {
			return fmt.Errorf("reindex: remove %d documents: %w", len(ids), err)
		}
		st.Removed += len(ids)
		ids = ids[:0]
		return nil
	}
	for id := lo; id <= hi; id++ {
		if present[id] {
			continue
		}
		ids = append(ids, id)
		if len(ids) == chunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// reindexPairs recomputes the pairs of every completed document once the
// whole index holds every embedding.
func reindexPairs(ctx context.Context, store ReindexStore, index docflow.SearchIndex, size int, opts ReindexOptions, st *ReindexStats) error {
	settings := opts.Settings
	if settings == nil {
		settings = noSettings{}
	}
	var after int64
	for {
		docs, last, err := store.ScanSearchDocuments(ctx, after, size)
		if err != nil {
			return fmt.Errorf("reindex pairs after file %d: %w", after, err)
		}
		if last == 0 {
			return nil
		}
		failed := map[int64]error{}
		ns, err := pairs(ctx, index, settings, docs, failed)
		if err != nil {
			return fmt.Errorf("reindex pairs: %w", err)
		}
		for id, e := range failed {
			opts.Log.Warn().Err(e).Int64("file_id", id).Msg("reindex: similar documents failed")
		}
		if err := store.ReplaceSimilarityPairs(ctx, ns); err != nil {
			return fmt.Errorf("reindex pairs: %w", err)
		}
		st.Pairs += len(ns)
		after = last
	}
}

// noSettings makes every setting take its default.
type noSettings struct{}

func (noSettings) Get(string) string { return "" }
func (noSettings) Lookup(context.Context, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTFOUND, "no settings")
}
func (noSettings) List(context.Context) ([]*docflow.Setting, error) { return nil, nil }
func (noSettings) Set(context.Context, string, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "no settings")
}
func (noSettings) Delete(context.Context, string) error { return nil }
