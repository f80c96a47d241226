package graphql

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	gqlgo "github.com/graph-gophers/graphql-go"

	"docflow"
)

// This file is search and similar, over the search index, filtered by the
// file access rule's view filter (FileAccess.VisibleTo) as the REST
// routes filter theirs.

// SearchReader reads what search and similar check against the database
// (docflow.SearchStore).
type SearchReader interface {
	// FileSummaries returns the files among ids that exist and that
	// visibleTo (when set) lets its user see.
	FileSummaries(ctx context.Context, ids []int64, visibleTo *docflow.Visibility) (map[int64]*docflow.FileSummary, error)
	// FindEmbedding returns ENOTFOUND when the file has no embedding.
	FindEmbedding(ctx context.Context, fileID int64) (*docflow.Embedding, error)
}

// Search bounds, as GET /api/search's.
const (
	searchMaxQuery   = 512
	searchMaxPerPage = 100
	similarMaxLimit  = 20
	// similarSlack extra neighbours are asked of the index, so that
	// files deleted since they were indexed can be dropped.
	similarSlack = 5
)

func invalidArg(field, msg string) error {
	e := docflow.Errorf(docflow.EINVALID, "%s", msg)
	e.Fields = []docflow.FieldError{{Field: field, Message: msg}}
	return asGraphQLError(e)
}

func (r *rootResolver) Search(ctx context.Context, args struct {
	Q                                             string
	MimeType, DocumentType, Language, Tag, Sender *string
	Page, PerPage                                 int32
}) (*searchResultResolver, error) {
	q := docflow.SearchQuery{Text: strings.TrimSpace(args.Q), Page: int(args.Page), PerPage: int(args.PerPage)}
	switch n := utf8.RuneCountInString(args.Q); {
	case q.Text == "":
		return nil, invalidArg("q", "q is required (1 to 512 characters)")
	case n > searchMaxQuery:
		return nil, invalidArg("q", "q must be at most 512 characters")
	case q.Page < 1:
		return nil, invalidArg("page", "page must be at least 1")
	case q.PerPage < 1 || q.PerPage > searchMaxPerPage:
		return nil, invalidArg("perPage", "perPage must be from 1 to 100")
	}
	for _, f := range []struct {
		v   *string
		dst *string
	}{{args.MimeType, &q.MimeType}, {args.DocumentType, &q.DocumentType}, {args.Language, &q.Language},
		{args.Tag, &q.Tag}, {args.Sender, &q.Sender}} {
		if f.v != nil {
			*f.dst = strings.TrimSpace(*f.v)
		}
	}
	q.VisibleTo = r.a.access().VisibleTo(userOf(ctx))
	res, err := r.a.d.Index.Search(ctx, q)
	if err != nil {
		return nil, asGraphQLError(err)
	}
	out := &searchResultResolver{total: res.Total, page: q.Page, perPage: q.PerPage, hits: []docflow.SearchHit{}}
	if len(res.Hits) > 0 {
		ids := make([]int64, len(res.Hits))
		for i, h := range res.Hits {
			ids[i] = h.FileID
		}
		// The index may lag behind the database: a file deleted or
		// unshared since it was indexed is dropped.
		live, err := r.a.d.Search.FileSummaries(ctx, ids, q.VisibleTo)
		if err != nil {
			return nil, asGraphQLError(err)
		}
		for _, h := range res.Hits {
			if _, ok := live[h.FileID]; !ok {
				out.total--
				continue
			}
			out.hits = append(out.hits, h)
		}
		out.total = max(out.total, len(out.hits))
	}
	return out, nil
}

type searchResultResolver struct {
	hits                 []docflow.SearchHit
	total, page, perPage int
}

func (r *searchResultResolver) Total() int32   { return int32(r.total) }
func (r *searchResultResolver) Page() int32    { return int32(r.page) }
func (r *searchResultResolver) PerPage() int32 { return int32(r.perPage) }
func (r *searchResultResolver) Pages() int32 {
	if r.total <= 0 {
		return 0
	}
	return int32((r.total + r.perPage - 1) / r.perPage)
}

func (r *searchResultResolver) Hits() []*hitResolver {
	out := make([]*hitResolver, len(r.hits))
	for i := range r.hits {
		out[i] = &hitResolver{&r.hits[i]}
	}
	return out
}

type hitResolver struct{ h *docflow.SearchHit }

func (r *hitResolver) FileID() int32            { return int32(r.h.FileID) }
func (r *hitResolver) OriginalFilename() string { return r.h.OriginalFilename }
func (r *hitResolver) DocumentTitle() string    { return r.h.DocumentTitle }
func (r *hitResolver) DocumentType() string     { return r.h.DocumentType }
func (r *hitResolver) Tags() []string {
	if r.h.Tags == nil {
		return []string{}
	}
	return r.h.Tags
}

func (r *hitResolver) Highlights() *JSON {
	hl := map[string]any{"document_title": "", "ocr_text": ""}
	for k, v := range r.h.Formatted {
		hl[k] = v
	}
	return &JSON{hl}
}

func (r *rootResolver) Similar(ctx context.Context, args struct {
	ID        int32
	Limit     int32
	Threshold float64
}) ([]*similarResolver, error) {
	limit := int(args.Limit)
	if limit < 1 || limit > similarMaxLimit {
		return nil, invalidArg("limit", "limit must be from 1 to 20")
	}
	if math.IsNaN(args.Threshold) || args.Threshold < 0 || args.Threshold > 1 {
		return nil, invalidArg("threshold", "threshold must be from 0.0 to 1.0")
	}
	id := int64(args.ID)
	// The document itself must be viewable; the neighbours are filtered
	// by the view filter.
	if _, err := r.a.fileFor(ctx, id, docflow.AccessView); err != nil {
		return nil, err
	}
	emb, err := r.a.d.Search.FindEmbedding(ctx, id)
	if docflow.ErrorCode(err) == docflow.ENOTFOUND {
		return []*similarResolver{}, nil
	} else if err != nil {
		return nil, asGraphQLError(err)
	}
	visible := r.a.access().VisibleTo(userOf(ctx))
	ns, err := r.a.d.Index.Nearest(ctx, emb.Vector, limit+similarSlack, args.Threshold, visible, id)
	if err != nil {
		return nil, asGraphQLError(err)
	}
	ids := make([]int64, len(ns))
	for i, n := range ns {
		ids[i] = n.FileID
	}
	live, err := r.a.d.Search.FileSummaries(ctx, ids, visible)
	if err != nil {
		return nil, asGraphQLError(err)
	}
	out := []*similarResolver{}
	for _, n := range ns {
		f := live[n.FileID]
		score := docflow.SimilarityScore(n.Score)
		if f == nil || score < args.Threshold {
			continue
		}
		out = append(out, &similarResolver{f: f, score: score})
	}
	slices.SortStableFunc(out, func(a, b *similarResolver) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.f.FileID, b.f.FileID)
	})
	return out[:min(len(out), limit)], nil
}

type similarResolver struct {
	f     *docflow.FileSummary
	score float64
}

func (r *similarResolver) FileID() int32            { return int32(r.f.FileID) }
func (r *similarResolver) OriginalFilename() string { return r.f.OriginalFilename }
func (r *similarResolver) DocumentTitle() *string   { return r.f.DocumentTitle }
func (r *similarResolver) SimilarityScore() float64 { return r.score }
func (r *similarResolver) MimeType() string         { return r.f.MimeType }
func (r *similarResolver) CreatedAt() gqlgo.Time    { return gqlgo.Time{Time: r.f.CreatedAt} }
