// Package elastic is the Elasticsearch 8 SearchIndex: language-analysed text
// fields, keyword filters and dense_vector kNN for similarity.
package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"

	"docflow"
)

var _ docflow.SearchIndex = (*Index)(nil)

const (
	// DefaultIndexName is the index documents go to.
	DefaultIndexName = "docflow-files"
	// DefaultDims is the embedding dimension of the offline embedder.
	DefaultDims = 384
	// DefaultBulkSize is the number of documents per _bulk request.
	DefaultBulkSize = 500
	// DefaultPerPage applies when a query does not say.
	DefaultPerPage = 20
	// MaxPerPage bounds one page; the API allows 100.
	MaxPerPage = 1000
	// maxResultWindow is Elasticsearch's index.max_result_window default:
	// from+size beyond it is an error, so pages past it only ask the total.
	maxResultWindow = 10_000
	// maxCandidates is Elasticsearch's limit on knn num_candidates.
	maxCandidates = 10_000
	// fragmentSize is the ocr_text excerpt length in characters.
	fragmentSize = 200
)

// languageAnalyzers pairs each UI language with its Elasticsearch analyser;
// text fields get one analysed sub-field per language.
func languageAnalyzers() [][2]string {
	return [][2]string{{"en", "english"}, {"de", "german"}, {"es", "spanish"}, {"fr", "french"}, {"it", "italian"}}
}

// Config configures the adapter.
type Config struct {
	// Addresses of the cluster nodes, e.g. http://localhost:9200.
	Addresses []string
	Username  string
	Password  string
	APIKey    string
	// IndexName defaults to DefaultIndexName.
	IndexName string
	// Dims is the dense_vector dimension (DefaultDims when 0). It is fixed
	// when the index is created.
	Dims int
	// Refresh is the _bulk refresh parameter: "wait_for" (the default)
	// returns once the changes are searchable, "false" is for bulk loads.
	Refresh string
	// BulkSize is the number of documents per _bulk request.
	BulkSize int
	// Transport replaces the HTTP transport (tests, TLS settings).
	Transport http.RoundTripper
}

// Index is the Elasticsearch SearchIndex. It is safe for concurrent use.
type Index struct {
	es       *elasticsearch.Client
	name     string
	dims     int
	refresh  string
	bulkSize int
}

// New connects and makes sure the index exists with docflow's mapping.
func New(ctx context.Context, cfg Config) (*Index, error) {
	if len(cfg.Addresses) == 0 {
		return nil, errors.New("elasticsearch: no addresses")
	}
	x := &Index{name: cfg.IndexName, dims: cfg.Dims, refresh: cfg.Refresh, bulkSize: cfg.BulkSize}
	if x.name == "" {
		x.name = DefaultIndexName
	}
	if x.dims == 0 {
		x.dims = DefaultDims
	}
	if x.dims < 0 || x.dims > 4096 {
		return nil, fmt.Errorf("elasticsearch: dimensions %d out of range 1..4096", x.dims)
	}
	if x.refresh == "" {
		x.refresh = "wait_for"
	}
	if x.bulkSize <= 0 {
		x.bulkSize = DefaultBulkSize
	}
	es, err := elasticsearch.NewClient(elasticsearch.Config{
		Addresses: cfg.Addresses,
		Username:  cfg.Username,
		Password:  cfg.Password,
		APIKey:    cfg.APIKey,
		Transport: cfg.Transport,
	})
	if err != nil {
		return nil, fmt.Errorf("elasticsearch client: %w", err)
	}
	x.es = es
	if err := x.ensureIndex(ctx); err != nil {
		return nil, err
	}
	return x, nil
}

// indexBody is the settings and mapping the index is created with.
func (x *Index) indexBody() map[string]any {
	langFields := func() map[string]any {
		f := map[string]any{}
		for _, l := range languageAnalyzers() {
			f[l[0]] = map[string]any{"type": "text", "analyzer": l[1]}
		}
		return f
	}
	keywordWithText := map[string]any{
		"type": "keyword", "ignore_above": 1024,
		"fields": map[string]any{"text": map[string]any{"type": "text", "analyzer": "standard"}},
	}
	return map[string]any{
		"settings": map[string]any{
			"analysis": map[string]any{
				// File names join words with _ . - which the standard
				// tokenizer keeps together ("invoice_2023"); split on
				// anything that is not a letter or digit.
				"tokenizer": map[string]any{
					"docflow_alnum": map[string]any{"type": "pattern", "pattern": `[^\p{L}\p{M}\p{N}]+`},
				},
				"analyzer": map[string]any{
					"docflow_filename": map[string]any{"type": "custom", "tokenizer": "docflow_alnum", "filter": []string{"lowercase"}},
				},
			},
		},
		"mappings": map[string]any{
			// Unknown fields are ignored, not mapped: a typo in a document
			// must not grow the mapping.
			"dynamic": false,
			"properties": map[string]any{
				"file_id":           map[string]any{"type": "long"},
				"ocr_text":          map[string]any{"type": "text", "analyzer": "standard", "fields": langFields()},
				"document_title":    map[string]any{"type": "text", "analyzer": "standard", "fields": langFields()},
				"original_filename": map[string]any{"type": "text", "analyzer": "docflow_filename"},
				"document_type":     keywordWithText,
				"tags":              keywordWithText,
				"sender":            keywordWithText,
				"language":          map[string]any{"type": "keyword"},
				"mime_type":         map[string]any{"type": "keyword"},
				"owner_id":          map[string]any{"type": "keyword"},
				"shared_with":       map[string]any{"type": "keyword"},
				"ocr_text_length":   map[string]any{"type": "integer"},
				"created_at":        map[string]any{"type": "date"},
				"embedding": map[string]any{
					"type": "dense_vector", "dims": x.dims, "index": true, "similarity": "cosine",
				},
			},
		},
	}
}

func (x *Index) ensureIndex(ctx context.Context) error {
	res, err := x.es.Indices.Exists([]string{x.name}, x.es.Indices.Exists.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("check index %s: %w", x.name, err)
	}
	drain(res)
	switch res.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusNotFound:
	default:
		return fmt.Errorf("check index %s: status %d", x.name, res.StatusCode)
	}
	body, err := json.Marshal(x.indexBody())
	if err != nil {
		return fmt.Errorf("encode mapping: %w", err)
	}
	res, err = x.es.Indices.Create(x.name, x.es.Indices.Create.WithBody(bytes.NewReader(body)), x.es.Indices.Create.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("create index %s: %w", x.name, err)
	}
	defer drain(res)
	if res.IsError() {
		e := readError(res)
		// Another process created it between our check and our create.
		if e.Type == "resource_already_exists_exception" {
			return nil
		}
		return fmt.Errorf("create index %s: %w", x.name, e)
	}
	return nil
}

// source is a document as stored in Elasticsearch.
type source struct {
	FileID           int64      `json:"file_id"`
	OwnerID          string     `json:"owner_id"`
	SharedWith       []string   `json:"shared_with,omitempty"`
	OriginalFilename string     `json:"original_filename"`
	DocumentTitle    string     `json:"document_title"`
	DocumentType     string     `json:"document_type"`
	Tags             []string   `json:"tags"`
	Sender           string     `json:"sender"`
	Language         string     `json:"language"`
	MimeType         string     `json:"mime_type"`
	OCRText          string     `json:"ocr_text"`
	OCRTextLength    int        `json:"ocr_text_length"`
	CreatedAt        *time.Time `json:"created_at,omitempty"`
	Embedding        []float32  `json:"embedding,omitempty"`
}

func toSource(d *docflow.SearchDocument) source {
	s := source{
		FileID: d.FileID, OwnerID: d.OwnerID, SharedWith: d.SharedWith,
		OriginalFilename: d.OriginalFilename, DocumentTitle: d.DocumentTitle, DocumentType: d.DocumentType,
		Tags: d.Tags, Sender: d.Sender, Language: d.Language, MimeType: d.MimeType,
		OCRText: d.OCRText, OCRTextLength: utf8.RuneCountInString(d.OCRText), Embedding: d.Embedding,
	}
	if s.Tags == nil {
		s.Tags = []string{}
	}
	if !d.CreatedAt.IsZero() {
		t := d.CreatedAt.UTC()
		s.CreatedAt = &t
	}
	return s
}

// bulkResponse is the part of a _bulk answer we read.
type bulkResponse struct {
	Errors bool                          `json:"errors"`
	Items  []map[string]bulkItemResponse `json:"items"`
}

type bulkItemResponse struct {
	ID     string   `json:"_id"`
	Status int      `json:"status"`
	Result string   `json:"result"`
	Error  *esError `json:"error"`
}

// esError is Elasticsearch's error object.
type esError struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
	Status int    `json:"-"`
}

func (e *esError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("elasticsearch status %d", e.Status)
	}
	return fmt.Sprintf("%s: %s", e.Type, e.Reason)
}

func readError(res *esapi.Response) *esError {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	e := &esError{Status: res.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if json.Unmarshal(b, &body) == nil && len(body.Error) > 0 {
		// "error" is an object, or a plain string on some endpoints.
		if json.Unmarshal(body.Error, e) != nil {
			var s string
			_ = json.Unmarshal(body.Error, &s)
			e.Reason = s
		}
	}
	return e
}

// drain reads the rest of a body so the connection is reused.
func drain(res *esapi.Response) {
	if res != nil && res.Body != nil {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
}

// Index adds or replaces documents through _bulk; items Elasticsearch
// rejects (a vector of the wrong dimension, a mapping conflict) come back in
// the map while the rest are indexed.
func (x *Index) Index(ctx context.Context, docs []*docflow.SearchDocument) (map[int64]error, error) {
	failed := make(map[int64]error)
	for start := 0; start < len(docs); start += x.bulkSize {
		var buf bytes.Buffer
		n := 0
		for _, d := range docs[start:min(start+x.bulkSize, len(docs))] {
			if d == nil {
				continue
			}
			if d.FileID <= 0 {
				failed[d.FileID] = fmt.Errorf("file id %d: not positive", d.FileID)
				continue
			}
			line, err := json.Marshal(toSource(d))
			if err != nil {
				failed[d.FileID] = fmt.Errorf("file %d: encode: %w", d.FileID, err)
				continue
			}
			fmt.Fprintf(&buf, `{"index":{"_id":"%d"}}`+"\n", d.FileID)
			buf.Write(line)
			buf.WriteByte('\n')
			n++
		}
		if n == 0 {
			continue
		}
		if err := x.bulk(ctx, &buf, failed); err != nil {
			return failed, err
		}
	}
	return failed, nil
}

// Delete removes documents; ids Elasticsearch does not know are fine.
func (x *Index) Delete(ctx context.Context, ids []int64) error {
	failed := make(map[int64]error)
	for start := 0; start < len(ids); start += x.bulkSize {
		var buf bytes.Buffer
		for _, id := range ids[start:min(start+x.bulkSize, len(ids))] {
			fmt.Fprintf(&buf, `{"delete":{"_id":"%d"}}`+"\n", id)
		}
		if buf.Len() == 0 {
			continue
		}
		if err := x.bulk(ctx, &buf, failed); err != nil {
			return err
		}
	}
	for id, err := range failed {
		return fmt.Errorf("delete %d: %w", id, err)
	}
	return nil
}

func (x *Index) bulk(ctx context.Context, body *bytes.Buffer, failed map[int64]error) error {
	res, err := x.es.Bulk(bytes.NewReader(body.Bytes()),
		x.es.Bulk.WithContext(ctx),
		x.es.Bulk.WithIndex(x.name),
		x.es.Bulk.WithRefresh(x.refresh),
	)
	if err != nil {
		return fmt.Errorf("bulk: %w", err)
	}
	defer drain(res)
	if res.IsError() {
		return fmt.Errorf("bulk: %w", readError(res))
	}
	var br bulkResponse
	if err := json.NewDecoder(res.Body).Decode(&br); err != nil {
		return fmt.Errorf("bulk: decode response: %w", err)
	}
	if !br.Errors {
		return nil
	}
	for _, item := range br.Items {
		for action, r := range item {
			id, err := strconv.ParseInt(r.ID, 10, 64)
			if err != nil {
				continue
			}
			// A delete of an unknown document is a 404 with result
			// "not_found": the document is gone, which is what was asked.
			if action == "delete" && r.Status == http.StatusNotFound {
				continue
			}
			if r.Error != nil {
				e := *r.Error
				e.Status = r.Status
				failed[id] = &e
			} else if r.Status >= 300 {
				failed[id] = &esError{Status: r.Status}
			}
		}
	}
	return nil
}

// searchFields are the analysed fields a query runs against with their
// boosts; title and file name weigh more than the body. Each text field is
// searched in its standard form and in the five language analysers, so
// "invoices" finds "invoice" in English and "Rechnungen" finds "Rechnung" in
// German whatever the document's language field says.
func searchFields() []struct {
	name  string
	boost float64
} {
	type f = struct {
		name  string
		boost float64
	}
	out := []f{{"original_filename", 2}, {"tags.text", 2}, {"document_type.text", 1.5}, {"sender.text", 1.5}}
	for _, base := range []f{{"document_title", 3}, {"ocr_text", 1}} {
		out = append(out, base)
		for _, l := range languageAnalyzers() {
			// Stemmed matches count a little less than exact ones.
			out = append(out, f{base.name + "." + l[0], base.boost * 0.5})
		}
	}
	return out
}

// textQuery is a bool of plain match queries: the text goes through the
// field analysers only and is never parsed as query syntax.
func textQuery(text string) map[string]any {
	var should []any
	for _, f := range searchFields() {
		should = append(should, map[string]any{
			"match": map[string]any{f.name: map[string]any{"query": text, "boost": f.boost}},
		})
	}
	return map[string]any{"bool": map[string]any{"should": should, "minimum_should_match": 1}}
}

// filters turns the query's filters into term and range filters.
func filters(q docflow.SearchQuery) ([]any, error) {
	var out []any
	term := func(field, v string) {
		if v != "" {
			out = append(out, map[string]any{"term": map[string]any{field: v}})
		}
	}
	term("mime_type", q.MimeType)
	term("document_type", q.DocumentType)
	term("language", q.Language)
	term("tags", q.Tag)
	term("sender", q.Sender)
	if q.TextQuality != "" {
		var r map[string]any
		switch q.TextQuality {
		case "no_text":
			r = map[string]any{"lte": 0}
		case "low":
			r = map[string]any{"gte": 1, "lt": 500}
		case "medium":
			r = map[string]any{"gte": 500, "lt": 2000}
		case "high":
			r = map[string]any{"gte": 2000}
		default:
			return nil, fmt.Errorf("text quality %q: want no_text, low, medium or high", q.TextQuality)
		}
		out = append(out, map[string]any{"range": map[string]any{"ocr_text_length": r}})
	}
	if q.DateFrom != nil || q.DateTo != nil {
		r := map[string]any{}
		if q.DateFrom != nil {
			r["gte"] = q.DateFrom.UTC().Format(time.RFC3339Nano)
		}
		if q.DateTo != nil {
			r["lte"] = q.DateTo.UTC().Format(time.RFC3339Nano)
		}
		out = append(out, map[string]any{"range": map[string]any{"created_at": r}})
	}
	if q.VisibleTo != nil {
		out = append(out, visibility(q.VisibleTo))
	}
	return out, nil
}

// visibility is the filter of the documents v lets its user see
// (docflow.Visibility.Sees): owned by the user, shared with them, or with
// v.Unclaimed of no owner (owner_id empty, or absent from a document
// written without it).
func visibility(v *docflow.Visibility) map[string]any {
	var should []any
	if v.UserID != "" {
		should = append(should,
			map[string]any{"term": map[string]any{"owner_id": v.UserID}},
			map[string]any{"term": map[string]any{"shared_with": v.UserID}})
	}
	if v.Unclaimed {
		should = append(should,
			map[string]any{"term": map[string]any{"owner_id": ""}},
			map[string]any{"bool": map[string]any{"must_not": []any{map[string]any{"exists": map[string]any{"field": "owner_id"}}}}})
	}
	if len(should) == 0 {
		return map[string]any{"match_none": map[string]any{}}
	}
	return map[string]any{"bool": map[string]any{"should": should, "minimum_should_match": 1}}
}

// searchBody builds the _search request for q; from and size are the page.
func searchBody(q docflow.SearchQuery, from, size int) (map[string]any, error) {
	fs, err := filters(q)
	if err != nil {
		return nil, err
	}
	var must any = map[string]any{"match_all": map[string]any{}}
	if text := strings.TrimSpace(q.Text); text != "" {
		must = textQuery(text)
	}
	boolQ := map[string]any{"must": []any{must}}
	if len(fs) > 0 {
		boolQ["filter"] = fs
	}
	body := map[string]any{
		"from":             from,
		"size":             size,
		"track_total_hits": true,
		"query":            map[string]any{"bool": boolQ},
		"_source":          []string{"file_id", "original_filename", "document_title", "document_type", "tags"},
	}
	if size > 0 {
		body["highlight"] = map[string]any{
			// The html encoder escapes the document's own text before the
			// tags are added, so only <mark> is markup.
			"encoder":             "html",
			"pre_tags":            []string{"<mark>"},
			"post_tags":           []string{"</mark>"},
			"require_field_match": false,
			"fields": map[string]any{
				"document_title": map[string]any{"number_of_fragments": 0, "no_match_size": 10_000},
				"ocr_text":       map[string]any{"fragment_size": fragmentSize, "number_of_fragments": 1, "no_match_size": fragmentSize},
			},
		}
	}
	return body, nil
}

// searchResponse is the part of a _search answer we read.
type searchResponse struct {
	Hits struct {
		Total struct {
			Value int `json:"value"`
		} `json:"total"`
		Hits []struct {
			ID        string              `json:"_id"`
			Score     *float64            `json:"_score"`
			Source    json.RawMessage     `json:"_source"`
			Highlight map[string][]string `json:"highlight"`
		} `json:"hits"`
	} `json:"hits"`
}

func (x *Index) search(ctx context.Context, body map[string]any) (*searchResponse, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode query: %w", err)
	}
	res, err := x.es.Search(
		x.es.Search.WithContext(ctx),
		x.es.Search.WithIndex(x.name),
		x.es.Search.WithBody(bytes.NewReader(b)),
	)
	if err != nil {
		return nil, err
	}
	defer drain(res)
	if res.IsError() {
		return nil, readError(res)
	}
	var sr searchResponse
	if err := json.NewDecoder(res.Body).Decode(&sr); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	return &sr, nil
}

// Search runs a plain-text query with filters; see docflow.SearchQuery.
func (x *Index) Search(ctx context.Context, q docflow.SearchQuery) (*docflow.SearchResult, error) {
	perPage := q.PerPage
	if perPage <= 0 {
		perPage = DefaultPerPage
	}
	perPage = min(perPage, MaxPerPage)
	page := max(q.Page, 1)
	from := int64(page-1) * int64(perPage)
	size := perPage
	// Past the result window Elasticsearch refuses the request; the page is
	// empty anyway for any realistic index, so only the total is fetched.
	if from+int64(size) > maxResultWindow {
		from, size = 0, 0
	}
	body, err := searchBody(q, int(from), size)
	if err != nil {
		return nil, err
	}
	sr, err := x.search(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	out := &docflow.SearchResult{Hits: make([]docflow.SearchHit, 0, len(sr.Hits.Hits)), Total: sr.Hits.Total.Value}
	for _, h := range sr.Hits.Hits {
		var src source
		if len(h.Source) > 0 {
			if err := json.Unmarshal(h.Source, &src); err != nil {
				return nil, fmt.Errorf("search: decode hit %s: %w", h.ID, err)
			}
		}
		id, err := strconv.ParseInt(h.ID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("search: hit id %q: %w", h.ID, err)
		}
		hit := docflow.SearchHit{
			FileID:           id,
			OriginalFilename: src.OriginalFilename,
			DocumentTitle:    src.DocumentTitle,
			DocumentType:     src.DocumentType,
			Tags:             src.Tags,
			Formatted: map[string]string{
				"document_title": first(h.Highlight["document_title"], html.EscapeString(src.DocumentTitle)),
				"ocr_text":       first(h.Highlight["ocr_text"], ""),
			},
		}
		if hit.Tags == nil {
			hit.Tags = []string{}
		}
		if h.Score != nil {
			hit.Score = *h.Score
		}
		out.Hits = append(out.Hits, hit)
	}
	return out, nil
}

func first(v []string, fallback string) string {
	if len(v) > 0 {
		return v[0]
	}
	return fallback
}

// Nearest runs an approximate kNN search (HNSW) over the embeddings; with
// num_candidates well above k it returns the exact neighbours for all but
// adversarial data.
func (x *Index) Nearest(ctx context.Context, vec []float32, k int, minScore float64, visibleTo *docflow.Visibility, exclude ...int64) ([]docflow.Neighbor, error) {
	if k <= 0 {
		return nil, nil
	}
	// Elasticsearch caps num_candidates (and so k) at 10,000.
	k = min(k, maxCandidates)
	if len(vec) != x.dims {
		return nil, fmt.Errorf("nearest: query vector has %d dimensions, index has %d", len(vec), x.dims)
	}
	sr, err := x.search(ctx, knnBody(vec, k, minScore, visibleTo, exclude))
	if err != nil {
		return nil, fmt.Errorf("nearest: %w", err)
	}
	out := make([]docflow.Neighbor, 0, len(sr.Hits.Hits))
	for _, h := range sr.Hits.Hits {
		id, err := strconv.ParseInt(h.ID, 10, 64)
		if err != nil || h.Score == nil {
			continue
		}
		// For cosine, Elasticsearch scores (1 + cos) / 2 so that scores
		// are positive; undo that to report the cosine itself.
		score := min(max(2**h.Score-1, 0), 1)
		if score < minScore {
			continue
		}
		out = append(out, docflow.Neighbor{FileID: id, Score: score})
		if len(out) == k {
			break
		}
	}
	return out, nil
}

func knnBody(vec []float32, k int, minScore float64, visibleTo *docflow.Visibility, exclude []int64) map[string]any {
	knn := map[string]any{
		"field":          "embedding",
		"query_vector":   vec,
		"k":              k,
		"num_candidates": min(max(100, 10*k), maxCandidates),
	}
	if minScore > 0 {
		// similarity is compared with the raw cosine, not the score.
		knn["similarity"] = minScore
	}
	var filter []any
	if visibleTo != nil {
		filter = append(filter, visibility(visibleTo))
	}
	if len(exclude) > 0 {
		filter = append(filter, map[string]any{"bool": map[string]any{
			"must_not": []any{map[string]any{"terms": map[string]any{"file_id": exclude}}},
		}})
	}
	if len(filter) > 0 {
		knn["filter"] = filter
	}
	return map[string]any{"knn": knn, "size": k, "_source": false}
}

// Ping reports whether the cluster answers.
func (x *Index) Ping(ctx context.Context) error {
	res, err := x.es.Ping(x.es.Ping.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("ping elasticsearch: %w", err)
	}
	defer drain(res)
	if res.IsError() {
		return fmt.Errorf("ping elasticsearch: status %d", res.StatusCode)
	}
	return nil
}

// Drop deletes the index (tests, and a full reindex into a fresh mapping).
func (x *Index) Drop(ctx context.Context) error {
	res, err := x.es.Indices.Delete([]string{x.name}, x.es.Indices.Delete.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("delete index %s: %w", x.name, err)
	}
	defer drain(res)
	if res.IsError() && res.StatusCode != http.StatusNotFound {
		return fmt.Errorf("delete index %s: %w", x.name, readError(res))
	}
	return nil
}

// Close releases nothing: the client holds only pooled HTTP connections.
func (x *Index) Close() error { return nil }
