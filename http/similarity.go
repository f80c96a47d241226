package http

import (
	"cmp"
	"slices"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// Similarity limits: the defaults and bounds of limit and threshold on the
// similar, pairs and diagnostics routes.
const (
	similarDefaultLimit     = 5
	similarMaxLimit         = 20
	similarDefaultThreshold = 0.3
	pairsDefaultThreshold   = 0.7
	pairsDefaultLimit       = 50
	pairsMaxLimit           = 200
	diagnosticsDefaultLimit = 1000
	diagnosticsMaxLimit     = 10000
	// similarSlack is how many extra neighbours are asked of the index, so
	// that files deleted since they were indexed can be dropped without
	// coming up short.
	similarSlack = 5
)

func (s *Server) mountSimilarity(h *searchHandlers) {
	b := Route{Auth: AuthUser}
	s.Handle("GET", "/api/files/{file_id}/similar", b, h.similar, docSimilar)
	s.Handle("GET", "/api/similarity/pairs", b, h.pairs, docSimilarPairs)
	s.Handle("GET", "/api/files/{file_id}/embedding-status", b, h.embeddingStatus, docEmbeddingStatus)
	s.Handle("GET", "/api/diagnostic/embeddings", b, h.embeddingDiagnostics, docEmbeddingDiagnostics)
}

// roundScore is the API's similarity: cosine clamped to [0, 1] and rounded
// to 4 decimals.
func roundScore(v float64) float64 { return docflow.SimilarityScore(v) }

type similarDocument struct {
	FileID           int64     `json:"file_id"`
	OriginalFilename string    `json:"original_filename"`
	DocumentTitle    *string   `json:"document_title"`
	SimilarityScore  float64   `json:"similarity_score"`
	MimeType         string    `json:"mime_type"`
	CreatedAt        time.Time `json:"created_at"`
}

type similarResponse struct {
	FileID           int64             `json:"file_id"`
	SimilarDocuments []similarDocument `json:"similar_documents"`
	Count            int               `json:"count"`
	Threshold        float64           `json:"threshold"`
	Limit            int               `json:"limit"`
	Message          string            `json:"message,omitempty"`
}

// similar is GET /api/files/{file_id}/similar: the nearest documents by
// the stored embedding, from the index's vectors.
func (h *searchHandlers) similar(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "file_id")
	if err != nil {
		return err
	}
	limit, err := searchInt(c, "limit", similarDefaultLimit, 1, similarMaxLimit)
	if err != nil {
		return err
	}
	threshold, err := searchFloat(c, "threshold", similarDefaultThreshold, 0, 1)
	if err != nil {
		return err
	}
	// The file itself must be viewable; what a route lists beside it is
	// filtered by the query (visibleTo).
	if _, err := h.s.fileByID(c, h.files, id, docflow.AccessView); err != nil {
		return err
	}
	ctx := RequestContext(c)
	visible := h.s.visibleTo(c)
	self, err := h.store.FileSummaries(ctx, []int64{id}, nil)
	if err != nil {
		return err
	}
	if self[id] == nil {
		return docflow.Errorf(docflow.ENOTFOUND, "File not found")
	}
	resp := similarResponse{FileID: id, SimilarDocuments: []similarDocument{}, Threshold: threshold, Limit: limit}
	emb, err := h.store.FindEmbedding(ctx, id)
	if docflow.ErrorCode(err) == docflow.ENOTFOUND {
		resp.Message = "This document has no embedding yet; similar documents are found once its text has been processed"
		writeJSON(c, fasthttp.StatusOK, resp)
		return nil
	} else if err != nil {
		return err
	}
	ns, err := h.index.Nearest(ctx, emb.Vector, limit+similarSlack, threshold, visible, id)
	if err != nil {
		h.s.log.Error().Err(err).Int64("file_id", id).Str("request_id", RequestID(c)).Msg("similar documents")
		return docflow.Errorf(docflow.EINTERNAL, "Similar documents could not be computed")
	}
	ids := make([]int64, len(ns))
	for i, n := range ns {
		ids[i] = n.FileID
	}
	live, err := h.store.FileSummaries(ctx, ids, visible)
	if err != nil {
		return err
	}
	for _, n := range ns {
		f := live[n.FileID]
		if f == nil {
			continue
		}
		score := roundScore(n.Score)
		if score < threshold {
			continue
		}
		resp.SimilarDocuments = append(resp.SimilarDocuments, similarDocument{FileID: f.FileID, OriginalFilename: f.OriginalFilename,
			DocumentTitle: f.DocumentTitle, SimilarityScore: score, MimeType: f.MimeType, CreatedAt: f.CreatedAt})
	}
	slices.SortStableFunc(resp.SimilarDocuments, func(a, b similarDocument) int {
		if c := cmp.Compare(b.SimilarityScore, a.SimilarityScore); c != 0 {
			return c
		}
		return cmp.Compare(a.FileID, b.FileID)
	})
	if len(resp.SimilarDocuments) > limit {
		resp.SimilarDocuments = resp.SimilarDocuments[:limit]
	}
	resp.Count = len(resp.SimilarDocuments)
	writeJSON(c, fasthttp.StatusOK, resp)
	return nil
}

type pairsResponse struct {
	Pairs             []*docflow.SimilarityPair `json:"pairs"`
	TotalPairs        int                       `json:"total_pairs"`
	Threshold         float64                   `json:"threshold"`
	Page              int                       `json:"page"`
	Pages             int                       `json:"pages"`
	PerPage           int                       `json:"per_page"`
	EmbeddingCoverage docflow.EmbeddingCoverage `json:"embedding_coverage"`
	// StoredThreshold is SIMILARITY_PAIR_THRESHOLD: pairs below it are not
	// stored, so a lower threshold finds no more.
	StoredThreshold float64 `json:"stored_threshold"`
}

// pairs is GET /api/similarity/pairs: the pairs stored by the indexer.
func (h *searchHandlers) pairs(c *fasthttp.RequestCtx) error {
	threshold, err := searchFloat(c, "threshold", pairsDefaultThreshold, 0, 1)
	if err != nil {
		return err
	}
	limit, err := searchInt(c, "limit", pairsDefaultLimit, 1, pairsMaxLimit)
	if err != nil {
		return err
	}
	page, err := searchInt(c, "page", 1, 1, searchMaxPage)
	if err != nil {
		return err
	}
	ctx := RequestContext(c)
	visible := h.s.visibleTo(c)
	pairs, total, err := h.store.FindSimilarityPairs(ctx, docflow.SimilarityPairFilter{MinScore: threshold, VisibleTo: visible, Page: page, PerPage: limit})
	if err != nil {
		return err
	}
	cov, err := h.store.EmbeddingCoverage(ctx, visible)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		p.Score = roundScore(p.Score)
	}
	writeJSON(c, fasthttp.StatusOK, pairsResponse{Pairs: pairs, TotalPairs: total, Threshold: threshold, Page: page,
		Pages: searchPages(total, limit), PerPage: limit, EmbeddingCoverage: cov,
		StoredThreshold: docflow.SimilarityPairThreshold.Get(h.s.cfg.Settings)})
	return nil
}

// embeddingStatus is GET /api/files/{file_id}/embedding-status.
func (h *searchHandlers) embeddingStatus(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "file_id")
	if err != nil {
		return err
	}
	// The file itself must be viewable; what a route lists beside it is
	// filtered by the query (visibleTo).
	if _, err := h.s.fileByID(c, h.files, id, docflow.AccessView); err != nil {
		return err
	}
	st, err := h.store.EmbeddingStatus(RequestContext(c), id, nil)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, st)
	return nil
}

type diagnosticsResponse struct {
	*docflow.EmbeddingDiagnostics
	Page    int `json:"page"`
	PerPage int `json:"per_page"`
	Pages   int `json:"pages"`
}

// embeddingDiagnostics is GET /api/diagnostic/embeddings: the counts over
// the files the caller may see and one page of per-file rows (newest
// first; page and per_page select others).
func (h *searchHandlers) embeddingDiagnostics(c *fasthttp.RequestCtx) error {
	page, err := searchInt(c, "page", 1, 1, searchMaxPage)
	if err != nil {
		return err
	}
	per, err := searchInt(c, "per_page", diagnosticsDefaultLimit, 1, diagnosticsMaxLimit)
	if err != nil {
		return err
	}
	d, err := h.store.EmbeddingDiagnostics(RequestContext(c), h.s.visibleTo(c), page, per)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, diagnosticsResponse{EmbeddingDiagnostics: d, Page: page, PerPage: per, Pages: searchPages(d.TotalFiles, per)})
	return nil
}
