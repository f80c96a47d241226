package bleve

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	blevesearch "github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"docflow"
)

const (
	// DefaultPerPage applies when a query does not say.
	DefaultPerPage = 20
	// MaxPerPage bounds one page; the API allows 100.
	MaxPerPage = 1000
	// DefaultExactLimit: bleve scores every matching document, about 100 ns
	// each on the target machines, so 5,000 matches keep an exactly ranked
	// query around half a millisecond of CPU.
	DefaultExactLimit = 5000
	// DefaultTotalCap is where counting a broad query stops. Meilisearch,
	// the engine the original service used, stops at the same 1,000
	// (maxTotalHits); counting further costs the same 100 ns per document
	// that made exhaustive scoring too slow.
	DefaultTotalCap = 1000
	// maxFrom bounds the offset handed to bleve, whose collector keeps
	// from+size hits: a page far past the end only needs the total.
	maxFrom = 100_000
)

// Search runs a plain-text query: the text is analysed into words and never
// parsed as query syntax. A text of only punctuation finds nothing; an empty
// text lists every document that passes the filters.
//
// Ranking. A query that matches at most ExactLimit documents (judged from
// term statistics, or because its filters leave fewer) is scored exactly —
// tf-idf over every text field, title and file name boosted — and counted
// exactly. Scoring a word found in most documents costs too much CPU per
// query, so broader queries are ranked in tiers the way
// Meilisearch's bucket sort does: documents matching in the title, file
// name, tags, type or sender first, then documents whose text holds every
// word, then those with any word. A tier is scored when it is small and taken
// in index order otherwise; the total is counted up to TotalCap and
// SearchResult.TotalCapped says so.
func (x *Index) Search(ctx context.Context, q docflow.SearchQuery) (*docflow.SearchResult, error) {
	if x.closed.Load() {
		return nil, errClosed
	}
	// NOTE: searches are CPU-bound and short. With more of them than cores
	// the Go scheduler time-slices them, and the unlucky ones wait several
	// slices. Admitting one search per core, in arrival order, keeps each
	// one running to completion and the tail close to the queue length
	// times the service time (docs/benchmarks.md, "Search").
	select {
	case x.searchSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-x.searchSlots }()
	perPage := q.PerPage
	if perPage <= 0 {
		perPage = DefaultPerPage
	}
	perPage = min(perPage, MaxPerPage)
	page := max(q.Page, 1)
	// In int64: a huge page number must not overflow into a negative offset.
	from := int64(page-1) * int64(perPage)

	filters, err := filterQueries(q)
	if err != nil {
		return nil, err
	}
	var filter query.Query
	if len(filters) > 0 {
		filter = query.NewConjunctionQuery(filters)
	}
	text := strings.TrimSpace(q.Text)
	terms := queryTerms(x.text, text)
	var textQ query.Query
	if text != "" {
		if len(terms) == 0 && len(queryTerms(x.filename, text)) == 0 {
			return &docflow.SearchResult{Hits: []docflow.SearchHit{}}, nil
		}
		textQ = fieldsQuery(text, searchFields())
	}

	st, err := x.termStats(ctx, text)
	if err != nil {
		return nil, err
	}
	textSelective := textQ != nil && st.all <= uint64(x.exactLimit)
	filterSelective := false
	if !textSelective && filter != nil {
		// Driven by the filters, a conjunction advances every term reader
		// of the text to each filtered document: that many readers per
		// document make a match as dear as one scored posting.
		limit := max(x.exactLimit/max(st.clauses, 1), 1)
		n, _, err := x.countUpTo(ctx, filter, limit)
		if err != nil {
			return nil, err
		}
		filterSelective = n < limit
	}

	var page0 pageOfHits
	switch {
	case textSelective || filterSelective:
		page0, err = x.exactSearch(ctx, textQ, filter, textSelective, from, perPage)
	default:
		page0, err = x.tieredSearch(ctx, text, terms, textQ, filter, st, from, perPage)
	}
	if err != nil {
		return nil, err
	}
	out := &docflow.SearchResult{Hits: make([]docflow.SearchHit, 0, len(page0.hits)), Total: page0.total, TotalCapped: page0.capped}
	for _, h := range page0.hits {
		hit, err := x.toHit(h, terms)
		if err != nil {
			return nil, err
		}
		out.Hits = append(out.Hits, hit)
	}
	return out, nil
}

type pageOfHits struct {
	hits   []*search.DocumentMatch
	total  int
	capped bool
}

// fieldsQuery matches text in each field with its boost; bleve analyses the
// text with each field's analyser.
func fieldsQuery(text string, fields []searchField) query.Query {
	qs := make([]query.Query, 0, len(fields))
	for _, f := range fields {
		mq := query.NewMatchQuery(text)
		mq.SetField(f.name)
		mq.SetBoost(f.boost)
		qs = append(qs, mq)
	}
	return query.NewDisjunctionQuery(qs)
}

// termStats are document frequencies of the query's terms, summed over the
// fields: an upper bound on how many documents a query or tier matches.
type termStats struct {
	all   uint64 // every search field
	meta  uint64 // every field but ocr_text
	maxDF uint64 // the commonest (field, term): a lower bound on matches
	// rarest bounds the documents holding every word: the smallest sum
	// over the fields of one word's frequencies; rarestOCR the same in the
	// text alone.
	rarest    uint64
	rarestOCR uint64
	// clauses is the number of (field, term) readers the text query opens.
	clauses int
}

func (x *Index) termStats(ctx context.Context, text string) (termStats, error) {
	var st termStats
	if text == "" {
		return st, nil
	}
	adv, err := x.idx.Advanced()
	if err != nil {
		return st, fmt.Errorf("search: %w", err)
	}
	r, err := adv.Reader()
	if err != nil {
		return st, fmt.Errorf("search: %w", err)
	}
	defer r.Close()
	perTerm := make(map[string]uint64)
	ocrDF := make(map[string]uint64)
	for _, f := range searchFields() {
		an := x.text
		if f.name == fFilename {
			an = x.filename
		}
		for term := range queryTerms(an, text) {
			tfr, err := r.TermFieldReader(ctx, []byte(term), f.name, false, false, false)
			if err != nil {
				return st, fmt.Errorf("search: term statistics: %w", err)
			}
			df := tfr.Count()
			tfr.Close()
			st.all += df
			st.maxDF = max(st.maxDF, df)
			st.clauses++
			if f.name != fOCRText {
				st.meta += df
			}
			perTerm[term] += df
			if f.name == fOCRText {
				ocrDF[term] = df
			}
		}
	}
	first := true
	for term := range queryTerms(x.text, text) {
		if df := perTerm[term]; first || df < st.rarest {
			st.rarest = df
		}
		if df := ocrDF[term]; first || df < st.rarestOCR {
			st.rarestOCR = df
		}
		first = false
	}
	return st, nil
}

// countUpTo counts the matches of q, stopping at limit.
func (x *Index) countUpTo(ctx context.Context, q query.Query, limit int) (int, bool, error) {
	// Unscored with a size, bleve stops collecting once from+size documents
	// matched. One hit at offset limit-1 avoids loading limit document ids.
	req := blevesearch.NewSearchRequestOptions(q, 1, limit-1, false)
	req.Score = blevesearch.ScoreNone
	res, err := x.idx.SearchInContext(ctx, req)
	if err != nil {
		return 0, false, fmt.Errorf("search: count: %w", err)
	}
	n := int(min(res.Total, uint64(limit)))
	return n, n >= limit, nil
}

// exactSearch scores every match: the query is selective, through its text
// or its filters.
func (x *Index) exactSearch(ctx context.Context, textQ, filter query.Query, textSelective bool, from int64, size int) (pageOfHits, error) {
	var q query.Query
	switch {
	case textQ == nil:
		q = filter
	case filter == nil:
		q = textQ
	case textSelective:
		// Few text matches: each is checked against the filters.
		bq := query.NewBooleanQuery(nil, nil, nil)
		bq.Must = textQ
		bq.AddFilter(filter)
		q = bq
	default:
		// Few filter matches: a conjunction advances the text's long
		// posting lists to them instead of walking every text match.
		// Filters have boost 0, so they do not change the scores.
		q = query.NewConjunctionQuery([]query.Query{textQ, filter})
	}
	if from > maxFrom {
		from, size = 0, 0
	}
	req := blevesearch.NewSearchRequestOptions(q, size, int(from), false)
	req.Fields = storedFields()
	res, err := x.idx.SearchInContext(ctx, req)
	if err != nil {
		return pageOfHits{}, fmt.Errorf("search: %w", err)
	}
	return pageOfHits{hits: res.Hits, total: int(res.Total)}, nil
}

// tieredSearch ranks a broad query; see Search.
func (x *Index) tieredSearch(ctx context.Context, text string, terms map[string]struct{}, textQ, filter query.Query, st termStats, from int64, size int) (pageOfHits, error) {
	var out pageOfHits
	// The total.
	if textQ == nil && filter == nil {
		n, err := x.idx.DocCount()
		if err != nil {
			return out, fmt.Errorf("search: %w", err)
		}
		out.total = int(n)
	} else if filter == nil && st.maxDF >= uint64(x.totalCap) {
		// Every document with the commonest term matches: at least maxDF
		// documents, more than the cap would count, at no cost.
		out.total, out.capped = int(st.maxDF), true
	} else {
		full := query.NewBooleanQuery(nil, nil, nil)
		full.Must = textQ
		if textQ == nil {
			full.Must = query.NewMatchAllQuery()
		}
		full.AddFilter(filter)
		n, capped, err := x.countUpTo(ctx, full, x.totalCap)
		if err != nil {
			return out, err
		}
		out.total, out.capped = n, capped
	}
	if from > maxFrom || from >= int64(out.total) && !out.capped {
		return out, nil
	}

	type tier struct {
		q      query.Query
		scored bool
	}
	var tiers []tier
	if textQ == nil {
		tiers = append(tiers, tier{q: query.NewMatchAllQuery()})
	} else {
		// Meilisearch's default rules in this order: documents with every
		// word before those with some ("words"), and among them those
		// matching in a short field before those matching only in the text
		// ("attribute").
		var meta []searchField
		for _, f := range searchFields() {
			if f.name != fOCRText {
				meta = append(meta, f)
			}
		}
		metaQ := fieldsQuery(text, meta)
		// A tier is scored when scoring it costs about what an exactly
		// ranked query may: a disjunction visits each posting once, a
		// conjunction advances all its readers for each candidate.
		small := func(candidates uint64, readers int) bool {
			return candidates*uint64(max(readers, 1)) <= uint64(x.exactLimit)
		}
		metaReaders := len(terms) * len(meta)
		if len(terms) > 1 {
			// "Every word" looks at the text only: as one conjunction of
			// a reader per word, bleve evaluates it unscored as an AND of
			// posting bitmaps, where every word in any field would OR six
			// posting lists per word first.
			all := make([]query.Query, 0, len(terms))
			for term := range terms {
				tq := query.NewTermQuery(term)
				tq.SetField(fOCRText)
				all = append(all, tq)
			}
			allQ := query.NewConjunctionQuery(all)
			tiers = append(tiers,
				tier{q: query.NewConjunctionQuery([]query.Query{allQ, metaQ}), scored: small(min(st.rarestOCR, st.meta), len(terms)+metaReaders)},
				tier{q: allQ, scored: small(st.rarestOCR, len(terms))},
			)
		}
		tiers = append(tiers,
			tier{q: metaQ, scored: small(st.meta, 1)},
			tier{q: textQ, scored: small(st.all, 1)},
		)
	}

	skip, need := from, size
	var earlier []query.Query
	for i, t := range tiers {
		bq := query.NewBooleanQuery(nil, nil, nil)
		bq.Must = t.q
		if len(earlier) > 0 {
			bq.AddMustNot(earlier...)
		}
		bq.AddFilter(filter)
		earlier = append(earlier, t.q)

		req := blevesearch.NewSearchRequestOptions(bq, need, int(skip), false)
		req.Fields = storedFields()
		if !t.scored {
			req.Score = blevesearch.ScoreNone
		}
		res, err := x.idx.SearchInContext(ctx, req)
		if err != nil {
			return out, fmt.Errorf("search: %w", err)
		}
		for _, h := range res.Hits {
			// Scores of different tiers are not comparable; rank by tier
			// first, then by the score within it mapped into [0, 1).
			h.Score = float64(len(tiers)-i) + h.Score/(1+h.Score)
		}
		out.hits = append(out.hits, res.Hits...)
		if len(res.Hits) == need {
			break
		}
		// The tier ran out: its total is exact, and the page continues in
		// the next tier.
		skip = max(skip-int64(res.Total), 0)
		need -= len(res.Hits)
	}
	return out, nil
}

// toHit turns a bleve hit with its stored fields into a SearchHit with
// highlights.
func (x *Index) toHit(h *search.DocumentMatch, terms map[string]struct{}) (docflow.SearchHit, error) {
	id, err := strconv.ParseInt(h.ID, 10, 64)
	if err != nil {
		return docflow.SearchHit{}, fmt.Errorf("search: document id %q: %w", h.ID, err)
	}
	title := fieldString(h.Fields[fTitle])
	ocr := fieldString(h.Fields[fOCRText])
	return docflow.SearchHit{
		FileID:           id,
		OriginalFilename: fieldString(h.Fields[fFilename]),
		DocumentTitle:    title,
		DocumentType:     fieldString(h.Fields[fDocumentType]),
		Tags:             fieldStrings(h.Fields[fTags]),
		Score:            h.Score,
		Formatted: map[string]string{
			fTitle:   highlightWhole(x.text, title, terms),
			fOCRText: highlightFragment(x.text, ocr, terms),
		},
	}, nil
}

func filterQueries(q docflow.SearchQuery) ([]query.Query, error) {
	var out []query.Query
	term := func(field, value string) {
		if value == "" {
			return
		}
		tq := query.NewTermQuery(value)
		tq.SetField(field)
		tq.SetBoost(0)
		out = append(out, tq)
	}
	term(fMimeType, q.MimeType)
	term(fDocumentType, q.DocumentType)
	term(fLanguage, q.Language)
	term(fTags, q.Tag)
	term(fSender, q.Sender)
	if q.TextQuality != "" {
		lo, hi, err := qualityBand(q.TextQuality)
		if err != nil {
			return nil, err
		}
		yes := true
		no := false
		var maxp *float64
		if hi > 0 {
			maxp = &hi
		}
		// Bands are [lo, hi); no_text is the single value 0.
		if q.TextQuality == "no_text" {
			nq := query.NewNumericRangeInclusiveQuery(&lo, &lo, &yes, &yes)
			nq.SetField(fTextLength)
			nq.SetBoost(0)
			out = append(out, nq)
		} else {
			nq := query.NewNumericRangeInclusiveQuery(&lo, maxp, &yes, &no)
			nq.SetField(fTextLength)
			nq.SetBoost(0)
			out = append(out, nq)
		}
	}
	if q.DateFrom != nil || q.DateTo != nil {
		var from, to time.Time
		if q.DateFrom != nil {
			from = q.DateFrom.UTC()
		}
		if q.DateTo != nil {
			to = q.DateTo.UTC()
		}
		yes := true
		dq := query.NewDateRangeInclusiveQuery(from, to, &yes, &yes)
		dq.SetField(fCreatedAt)
		dq.SetBoost(0)
		out = append(out, dq)
	}
	if q.VisibleTo != nil {
		out = append(out, visibility(q.VisibleTo))
	}
	return out, nil
}

// visibility is the query of the documents v lets its user see
// (docflow.Visibility.Sees): owned by the user, shared with them, or with
// v.Unclaimed of no owner (an unclaimed document's owner field is the
// empty term).
func visibility(v *docflow.Visibility) query.Query {
	term := func(field, value string) query.Query {
		t := query.NewTermQuery(value)
		t.SetField(field)
		t.SetBoost(0)
		return t
	}
	var or []query.Query
	if v.UserID != "" {
		or = append(or, term(fOwner, v.UserID), term(fSharedWith, v.UserID))
	}
	if v.Unclaimed {
		or = append(or, term(fOwner, ""))
	}
	if len(or) == 0 {
		return query.NewMatchNoneQuery()
	}
	return query.NewDisjunctionQuery(or)
}

// qualityBand maps a text_quality value to its OCR text length band [lo, hi)
// in characters; hi 0 means unbounded.
func qualityBand(name string) (lo, hi float64, err error) {
	switch name {
	case "no_text":
		return 0, 0, nil
	case "low":
		return 1, 500, nil
	case "medium":
		return 500, 2000, nil
	case "high":
		return 2000, 0, nil
	}
	return 0, 0, fmt.Errorf("text quality %q: want no_text, low, medium or high", name)
}

func fieldString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		if len(t) > 0 {
			s, _ := t[0].(string)
			return s
		}
	}
	return ""
}

func fieldStrings(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return []string{}
}
