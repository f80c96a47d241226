package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"docflow"
	"docflow/actors/indexer"
	"docflow/storage/postgres"
	searchbleve "docflow/storage/search/bleve"
)

// mixEnv is the server of the load and soak sections: a multi-user
// `docflow serve` on a throwaway database seeded with docs documents
// (about 2 KB of text each, in the database and in its search index)
// owned in turn by users users, each with an API token.
type mixEnv struct {
	s      *served
	dbURL  string
	mixer  *mixer
	drop   func()
	seeded time.Duration
}

// mixUsers is the number of users of the mix.
const mixUsers = 4

func newMixEnv(ctx context.Context, o *options, name string, docs int, env ...string) (*mixEnv, error) {
	dbURL, drop, err := benchDB(ctx, name)
	if err != nil {
		return nil, err
	}
	e := &mixEnv{dbURL: dbURL, drop: drop}
	fail := func(err error) (*mixEnv, error) { e.close(); return nil, err }
	workdir := o.workdir + "/" + name
	t0 := time.Now()
	users, tokens, err := seedMixed(ctx, dbURL, workdir, docs)
	if err != nil {
		return fail(fmt.Errorf("seed: %w", err))
	}
	e.seeded = time.Since(t0)
	s, err := newServed(o.bin, dbURL, workdir, append([]string{"AUTH_ENABLED=true", "MULTI_USER_ENABLED=true"}, env...)...)
	if err != nil {
		return fail(err)
	}
	e.s = s
	if err := s.start(ctx); err != nil {
		return fail(err)
	}
	tpl, err := uploadTemplates(name, 32, 100<<10)
	if err != nil {
		return fail(err)
	}
	// Room for a second of the highest rate to wait at once.
	const inFlight = 1024
	e.mixer = &mixer{url: s.url, users: users, tokens: tokens, docs: docs, uploads: tpl, maxInFlight: inFlight,
		client: &fasthttp.HostClient{Addr: strings.TrimPrefix(s.url, "http://"), MaxConns: inFlight,
			ReadTimeout: 60 * time.Second, WriteTimeout: 60 * time.Second, MaxIdleConnDuration: time.Minute}}
	s.clientConns = e.mixer.client.ConnsCount
	return e, nil
}

func (e *mixEnv) close() {
	if e.s != nil {
		e.s.stop()
	}
	if e.mixer != nil {
		e.mixer.client.CloseIdleConnections()
	}
	e.drop()
}

// seedMixed writes docs completed documents owned in turn by mixUsers
// users into the database at dbURL (migrating it first), builds their
// search index under workdir as `docflow reindex` would, and makes each
// user an API token. It returns the user ids and their tokens.
func seedMixed(ctx context.Context, dbURL, workdir string, docs int) ([]string, []string, error) {
	db, err := postgres.Open(ctx, dbURL, 8)
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	users := make([]string, mixUsers)
	tokens := make([]string, mixUsers)
	for u := range users {
		users[u] = fmt.Sprintf("load-user-%d", u)
		if tokens[u], err = benchToken(ctx, db, users[u]); err != nil {
			return nil, nil, err
		}
	}
	const dims = 384
	gen := newSearchDocGen(dims)
	const chunk = 2000
	for lo := 1; lo <= docs; lo += chunk {
		hi := min(lo+chunk-1, docs)
		rows := make([][]any, 0, hi-lo+1)
		embs := make([][]any, 0, hi-lo+1)
		for id := lo; id <= hi; id++ {
			d := gen.doc(int64(id))
			meta, err := json.Marshal(map[string]any{"title": d.DocumentTitle, "document_type": d.DocumentType,
				"sender": d.Sender, "tags": d.Tags, "language": d.Language})
			if err != nil {
				return nil, nil, err
			}
			rows = append(rows, []any{int64(id), fmt.Sprintf("%064x", id), d.OriginalFilename, fmt.Sprintf("%d.pdf", id),
				int64(len(d.OCRText)), d.MimeType, docflow.StatusCompleted, d.OCRText, d.DocumentTitle, string(meta), d.Tags,
				d.Language, d.CreatedAt, d.CreatedAt, users[(id-1)%mixUsers]})
			embs = append(embs, []any{int64(id), dims, "bench", d.Embedding})
		}
		if err := db.CopyBenchRows(ctx, "files", []string{"id", "filehash", "original_filename", "stored_filename",
			"file_size", "mime_type", "status", "ocr_text", "document_title", "ai_metadata", "tags", "language", "created_at", "updated_at", "owner_id"},
			rows); err != nil {
			return nil, nil, fmt.Errorf("copy files: %w", err)
		}
		if err := db.CopyBenchRows(ctx, "file_embeddings", []string{"file_id", "dimensions", "model", "vector"}, embs); err != nil {
			return nil, nil, fmt.Errorf("copy embeddings: %w", err)
		}
	}
	if err := db.SetFileIDSequence(ctx, docs); err != nil {
		return nil, nil, err
	}
	if err := db.VacuumAnalyze(ctx); err != nil {
		return nil, nil, err
	}
	idx, err := searchbleve.Open(workdir+"/search", searchbleve.Options{Dims: dims, NoSync: true})
	if err != nil {
		return nil, nil, err
	}
	st, err := indexer.Reindex(ctx, postgres.NewSearchStore(db), idx, indexer.ReindexOptions{BatchSize: 1000, Log: zerolog.Nop()})
	if cerr := idx.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reindex: %w", err)
	}
	if st.Indexed != docs {
		return nil, nil, fmt.Errorf("reindexed %d of %d documents", st.Indexed, docs)
	}
	return users, tokens, nil
}
