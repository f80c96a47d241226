package http

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"docflow"
)

// SearchDeps is what the search, saved-search and similarity routes need.
type SearchDeps struct {
	Index docflow.SearchIndex
	Store docflow.SearchStore
	// Files finds the file a similarity route names, for docflow.Authorize.
	Files docflow.FileStore
}

// MountSearch registers GET /api/search, the saved-search routes and the
// similarity routes (similar, similarity/pairs, embedding-status,
// diagnostic/embeddings).
func (s *Server) MountSearch(d SearchDeps) {
	if d.Index == nil || d.Store == nil || d.Files == nil {
		panic("http: MountSearch needs Index, Store and Files")
	}
	h := &searchHandlers{s: s, index: d.Index, store: d.Store, files: d.Files}
	b := Route{Auth: AuthUser}
	s.Handle("GET", "/api/search", b, h.search, docSearch)
	s.mountSavedSearches(d.Store)
	s.mountSimilarity(h)
}

type searchHandlers struct {
	s     *Server
	index docflow.SearchIndex
	store docflow.SearchStore
	files docflow.FileStore
}

// Search limits: the query's length, results a page, a filter value's
// length.
const (
	searchMaxQuery   = 512
	searchMaxPerPage = 100
	searchMaxFilter  = 256
	// searchMaxPage keeps page*per_page far from overflowing; the index
	// answers any page beyond its documents with no hits.
	searchMaxPage = 1_000_000
)

// searchArg returns a query parameter as a copied string and whether it was
// given (an empty value counts as not given).
func searchArg(c *fasthttp.RequestCtx, name string) (string, bool) {
	v := c.QueryArgs().Peek(name)
	if len(v) == 0 {
		return "", false
	}
	return string(v), true
}

// searchText returns an optional text filter, checked for UTF-8 and length.
func searchText(c *fasthttp.RequestCtx, name string) (string, error) {
	v, ok := searchArg(c, name)
	if !ok {
		return "", nil
	}
	if !utf8.ValidString(v) {
		return "", invalid(name, "%s must be valid UTF-8", name)
	}
	if utf8.RuneCountInString(v) > searchMaxFilter {
		return "", invalid(name, "%s must be at most %d characters", name, searchMaxFilter)
	}
	return strings.TrimSpace(v), nil
}

// searchInt parses an optional integer parameter within [lo, hi].
func searchInt(c *fasthttp.RequestCtx, name string, def, lo, hi int) (int, error) {
	v, ok := searchArg(c, name)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		return 0, invalid(name, "%s must be an integer from %d to %d", name, lo, hi)
	}
	return n, nil
}

// searchFloat parses an optional number parameter within [lo, hi].
func searchFloat(c *fasthttp.RequestCtx, name string, def, lo, hi float64) (float64, error) {
	v, ok := searchArg(c, name)
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || f < lo || f > hi {
		return 0, invalid(name, "%s must be a number from %g to %g", name, lo, hi)
	}
	return f, nil
}

// Unix timestamps accepted for date_from and date_to: years 1 to 9999.
const (
	searchMinUnix = -62135596800
	searchMaxUnix = 253402300799
)

func searchUnix(c *fasthttp.RequestCtx, name string) (*time.Time, error) {
	v, ok := searchArg(c, name)
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < searchMinUnix || n > searchMaxUnix {
		return nil, invalid(name, "%s must be a Unix timestamp (seconds)", name)
	}
	t := time.Unix(n, 0).UTC()
	return &t, nil
}

var searchTextQualities = []string{"no_text", "low", "medium", "high"}

// parseSearchQuery validates every parameter of GET /api/search.
func (h *searchHandlers) parseSearchQuery(c *fasthttp.RequestCtx) (docflow.SearchQuery, error) {
	var q docflow.SearchQuery
	raw, _ := searchArg(c, "q")
	if !utf8.ValidString(raw) {
		return q, invalid("q", "q must be valid UTF-8")
	}
	n := utf8.RuneCountInString(raw)
	if n > searchMaxQuery {
		return q, invalid("q", "q must be at most %d characters (got %d)", searchMaxQuery, n)
	}
	q.Text = strings.TrimSpace(raw)
	if q.Text == "" {
		return q, invalid("q", "q is required (1 to %d characters)", searchMaxQuery)
	}
	var err error
	if q.Page, err = searchInt(c, "page", 1, 1, searchMaxPage); err != nil {
		return q, err
	}
	if q.PerPage, err = searchInt(c, "per_page", 20, 1, searchMaxPerPage); err != nil {
		return q, err
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"mime_type", &q.MimeType}, {"document_type", &q.DocumentType}, {"language", &q.Language},
		{"tags", &q.Tag}, {"sender", &q.Sender}, {"text_quality", &q.TextQuality}} {
		if *f.dst, err = searchText(c, f.name); err != nil {
			return q, err
		}
	}
	if q.TextQuality != "" && !searchContains(searchTextQualities, q.TextQuality) {
		return q, invalid("text_quality", "text_quality must be one of %s", strings.Join(searchTextQualities, ", "))
	}
	if q.DateFrom, err = searchUnix(c, "date_from"); err != nil {
		return q, err
	}
	if q.DateTo, err = searchUnix(c, "date_to"); err != nil {
		return q, err
	}
	if q.DateFrom != nil && q.DateTo != nil && q.DateFrom.After(*q.DateTo) {
		return q, invalid("date_from", "date_from must not be after date_to")
	}
	q.VisibleTo = h.s.visibleTo(c)
	return q, nil
}

func searchContains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

type searchResponse struct {
	Results []docflow.SearchHit `json:"results"`
	Total   int                 `json:"total"`
	// TotalCapped: counting stopped early, at least Total documents match.
	TotalCapped bool   `json:"total_capped"`
	Page        int    `json:"page"`
	PerPage     int    `json:"per_page"`
	Pages       int    `json:"pages"`
	Query       string `json:"query"`
}

func searchPages(total, perPage int) int {
	if total <= 0 || perPage <= 0 {
		return 0
	}
	return (total + perPage - 1) / perPage
}

// search is GET /api/search. When the index fails the answer is 200 with
// no results (the error is logged): search is an aid, and a backend outage
// must not break the pages that embed it.
func (h *searchHandlers) search(c *fasthttp.RequestCtx) error {
	q, err := h.parseSearchQuery(c)
	if err != nil {
		return err
	}
	ctx := RequestContext(c)
	resp := searchResponse{Results: []docflow.SearchHit{}, Page: q.Page, PerPage: q.PerPage, Query: q.Text}
	res, err := h.index.Search(ctx, q)
	if err != nil {
		h.s.log.Error().Err(err).Str("request_id", RequestID(c)).Msg("search backend failed; answering with no results")
		writeJSON(c, fasthttp.StatusOK, resp)
		return nil
	}
	resp.Total, resp.TotalCapped = res.Total, res.TotalCapped
	if len(res.Hits) > 0 {
		ids := make([]int64, len(res.Hits))
		for i, hit := range res.Hits {
			ids[i] = hit.FileID
		}
		// The index may lag behind Postgres: a file deleted (or unshared)
		// since it was indexed is dropped here rather than shown.
		live, err := h.store.FileSummaries(ctx, ids, q.VisibleTo)
		if err != nil {
			return err
		}
		for _, hit := range res.Hits {
			if _, ok := live[hit.FileID]; !ok {
				resp.Total--
				continue
			}
			if hit.Tags == nil {
				hit.Tags = []string{}
			}
			if hit.Formatted == nil {
				hit.Formatted = map[string]string{}
			}
			for _, k := range []string{"document_title", "ocr_text"} {
				if _, ok := hit.Formatted[k]; !ok {
					hit.Formatted[k] = ""
				}
			}
			resp.Results = append(resp.Results, hit)
		}
		resp.Total = max(resp.Total, len(resp.Results))
	}
	resp.Pages = searchPages(resp.Total, q.PerPage)
	writeJSON(c, fasthttp.StatusOK, resp)
	return nil
}
