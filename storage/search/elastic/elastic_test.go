package elastic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/storage/search/searchtest"
)

// The response bodies below follow the Elasticsearch 8 API reference
// (bulk, search, kNN search, create index): same fields, same nesting.

const createIndexResponse = `{"acknowledged":true,"shards_acknowledged":true,"index":"docflow-files"}`

const bulkResponseWithItemError = `{
  "took": 30,
  "errors": true,
  "items": [
    {"index": {"_index": "docflow-files", "_id": "1", "_version": 1, "result": "created",
      "_shards": {"total": 2, "successful": 1, "failed": 0}, "_seq_no": 0, "_primary_term": 1, "status": 201}},
    {"index": {"_index": "docflow-files", "_id": "2", "status": 400,
      "error": {"type": "document_parsing_exception",
        "reason": "[1:312] failed to parse: The [dense_vector] field [embedding] in doc [document with id '2'] has a different number of dimensions [3] than defined in the mapping [8]",
        "caused_by": {"type": "illegal_argument_exception", "reason": "The [dense_vector] field [embedding] in doc [document with id '2'] has a different number of dimensions [3] than defined in the mapping [8]"}}}},
    {"index": {"_index": "docflow-files", "_id": "3", "_version": 2, "result": "updated",
      "_shards": {"total": 2, "successful": 1, "failed": 0}, "_seq_no": 1, "_primary_term": 1, "status": 200}}
  ]
}`

const bulkDeleteResponse = `{
  "took": 3,
  "errors": false,
  "items": [
    {"delete": {"_index": "docflow-files", "_id": "1", "_version": 3, "result": "deleted",
      "_shards": {"total": 2, "successful": 1, "failed": 0}, "_seq_no": 4, "_primary_term": 1, "status": 200}},
    {"delete": {"_index": "docflow-files", "_id": "999", "_version": 1, "result": "not_found",
      "_shards": {"total": 2, "successful": 1, "failed": 0}, "_seq_no": 5, "_primary_term": 1, "status": 404}}
  ]
}`

const searchResponseBody = `{
  "took": 5,
  "timed_out": false,
  "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
  "hits": {
    "total": {"value": 42, "relation": "eq"},
    "max_score": 3.2,
    "hits": [
      {"_index": "docflow-files", "_id": "7", "_score": 3.2,
        "_source": {"file_id": 7, "original_filename": "invoice_7.pdf", "document_title": "<b>Invoice</b> March",
          "document_type": "invoice", "tags": ["tax", "home"]},
        "highlight": {
          "document_title": ["&lt;b&gt;<mark>Invoice</mark>&lt;&#x2F;b&gt; March"],
          "ocr_text": ["Please pay the <mark>invoice</mark> &amp; &lt;script&gt; within 30 days"]
        }},
      {"_index": "docflow-files", "_id": "9", "_score": 1.1,
        "_source": {"file_id": 9, "original_filename": "scan.pdf", "document_title": "Tom & Jerry <3",
          "document_type": "letter", "tags": []},
        "highlight": {"ocr_text": ["the <mark>invoice</mark> is attached"]}}
    ]
  }
}`

const knnResponseBody = `{
  "took": 12,
  "timed_out": false,
  "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
  "hits": {
    "total": {"value": 3, "relation": "eq"},
    "max_score": 0.975,
    "hits": [
      {"_index": "docflow-files", "_id": "4", "_score": 0.975},
      {"_index": "docflow-files", "_id": "8", "_score": 0.8},
      {"_index": "docflow-files", "_id": "5", "_score": 0.55}
    ]
  }
}`

const indexExistsError = `{"error":{"root_cause":[{"type":"resource_already_exists_exception","reason":"index [docflow-files/abc] already exists","index_uuid":"abc","index":"docflow-files"}],"type":"resource_already_exists_exception","reason":"index [docflow-files/abc] already exists","index_uuid":"abc","index":"docflow-files"},"status":400}`

// request is one request the fake cluster received.
type request struct {
	Method, Path string
	Query        map[string][]string
	Body         string
}

// fakeES answers like an Elasticsearch 8 node: the product header the client
// insists on, and the canned body the test's route function picks.
type fakeES struct {
	mu      sync.Mutex
	reqs    []request
	product bool
	route   func(r request) (int, string)
}

func (f *fakeES) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	req := request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: string(b)}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.product {
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
	}
	w.Header().Set("Content-Type", "application/json")
	status, body := f.route(req)
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (f *fakeES) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// last returns the last request whose path ends with suffix.
func (f *fakeES) last(t *testing.T, suffix string) request {
	t.Helper()
	reqs := f.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.HasSuffix(reqs[i].Path, suffix) {
			return reqs[i]
		}
	}
	t.Fatalf("no request to *%s among %v", suffix, reqs)
	return request{}
}

// newFake starts a fake node where the index already exists and route
// answers everything else.
func newFake(t *testing.T, route func(r request) (int, string)) (*fakeES, *Index) {
	t.Helper()
	f := &fakeES{product: true, route: func(r request) (int, string) {
		if r.Method == http.MethodHead && r.Path == "/docflow-files" {
			return 200, ""
		}
		return route(r)
	}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	x, err := New(context.Background(), Config{Addresses: []string{srv.URL}, Dims: 8})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f, x
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("body %q is not JSON: %v", s, err)
	}
	return m
}

// path walks nested maps: path(m, "a", "b") is m["a"]["b"].
func path(m any, keys ...string) any {
	for _, k := range keys {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[k]
	}
	return m
}

func TestNewCreatesIndexWithMapping(t *testing.T) {
	f := &fakeES{product: true, route: func(r request) (int, string) {
		switch r.Method {
		case http.MethodHead:
			return 404, ""
		case http.MethodPut:
			return 200, createIndexResponse
		}
		return 500, `{}`
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	if _, err := New(context.Background(), Config{Addresses: []string{srv.URL}, Dims: 384}); err != nil {
		t.Fatalf("New: %v", err)
	}
	put := f.last(t, "/docflow-files")
	if put.Method != http.MethodPut {
		t.Fatalf("last request %s %s, want PUT /docflow-files", put.Method, put.Path)
	}
	body := decode(t, put.Body)
	props := path(body, "mappings", "properties")
	emb := path(props, "embedding").(map[string]any)
	if emb["type"] != "dense_vector" || emb["dims"] != 384.0 || emb["similarity"] != "cosine" || emb["index"] != true {
		t.Errorf("embedding mapping = %v", emb)
	}
	for _, field := range []string{"ocr_text", "document_title"} {
		for lang, analyzer := range map[string]string{"en": "english", "de": "german", "es": "spanish", "fr": "french", "it": "italian"} {
			if got := path(props, field, "fields", lang, "analyzer"); got != analyzer {
				t.Errorf("%s.%s analyzer = %v, want %s", field, lang, got, analyzer)
			}
		}
	}
	for _, field := range []string{"mime_type", "language", "owner_id", "shared_with", "tags", "sender", "document_type"} {
		if got := path(props, field, "type"); got != "keyword" {
			t.Errorf("%s type = %v, want keyword", field, got)
		}
	}
	for _, field := range []string{"tags", "sender", "document_type"} {
		if got := path(props, field, "fields", "text", "type"); got != "text" {
			t.Errorf("%s.text type = %v, want text", field, got)
		}
	}
	if got := path(props, "original_filename", "analyzer"); got != "docflow_filename" {
		t.Errorf("original_filename analyzer = %v", got)
	}
	if got := path(body, "settings", "analysis", "analyzer", "docflow_filename", "tokenizer"); got != "docflow_alnum" {
		t.Errorf("filename analyzer tokenizer = %v", got)
	}
	if path(props, "ocr_text_length", "type") != "integer" || path(props, "created_at", "type") != "date" {
		t.Errorf("ocr_text_length/created_at mapping = %v / %v", path(props, "ocr_text_length"), path(props, "created_at"))
	}
}

func TestNewToleratesConcurrentCreate(t *testing.T) {
	f := &fakeES{product: true, route: func(r request) (int, string) {
		if r.Method == http.MethodHead {
			return 404, ""
		}
		return 400, indexExistsError
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	if _, err := New(context.Background(), Config{Addresses: []string{srv.URL}}); err != nil {
		t.Fatalf("New: %v", err)
	}
}

func TestNewRefusesServerWithoutProductHeader(t *testing.T) {
	// go-elasticsearch refuses a server that does not say it is
	// Elasticsearch; this is why the tests' fake sets the header.
	f := &fakeES{route: func(r request) (int, string) { return 200, "" }}
	srv := httptest.NewServer(f)
	defer srv.Close()
	if _, err := New(context.Background(), Config{Addresses: []string{srv.URL}}); err == nil {
		t.Fatal("New succeeded against a server without X-Elastic-Product")
	}
}

func TestIndexBulkWithPerItemErrors(t *testing.T) {
	f, x := newFake(t, func(r request) (int, string) { return 200, bulkResponseWithItemError })
	created := time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("CEST", 2*3600))
	docs := []*docflow.SearchDocument{
		{FileID: 1, OwnerID: "alice", SharedWith: []string{"bob"}, OriginalFilename: "a.pdf", DocumentTitle: "A",
			DocumentType: "invoice", Tags: []string{"tax"}, Sender: "Acme", Language: "de", MimeType: "application/pdf",
			OCRText: "Grüße", CreatedAt: created, Embedding: []float32{1, 0, 0, 0, 0, 0, 0, 0}},
		{FileID: 2, OCRText: "two", Embedding: []float32{1, 2, 3}},
		{FileID: 3, OCRText: ""},
		{FileID: -1},
	}
	failed, err := x.Index(context.Background(), docs)
	if err != nil {
		t.Fatalf("Index: %v", err)
	}
	if len(failed) != 2 || failed[2] == nil || failed[-1] == nil {
		t.Fatalf("per-item errors = %v, want documents 2 and -1", failed)
	}
	if !strings.Contains(failed[2].Error(), "document_parsing_exception") || !strings.Contains(failed[2].Error(), "dimensions") {
		t.Errorf("error for 2 = %v", failed[2])
	}

	req := f.last(t, "/_bulk")
	if req.Method != http.MethodPost && req.Method != http.MethodPut {
		t.Errorf("bulk method %s", req.Method)
	}
	if req.Path != "/docflow-files/_bulk" || req.Query["refresh"][0] != "wait_for" {
		t.Errorf("bulk request %s?%v", req.Path, req.Query)
	}
	lines := strings.Split(strings.TrimSuffix(req.Body, "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("bulk body has %d lines, want 6 (3 actions, 3 sources):\n%s", len(lines), req.Body)
	}
	if got := decode(t, lines[0]); path(got, "index", "_id") != "1" {
		t.Errorf("action line %s", lines[0])
	}
	src := decode(t, lines[1])
	want := map[string]any{
		"file_id": 1.0, "owner_id": "alice", "original_filename": "a.pdf", "document_title": "A",
		"document_type": "invoice", "sender": "Acme", "language": "de", "mime_type": "application/pdf",
		"ocr_text": "Grüße", "ocr_text_length": 5.0, "created_at": "2024-05-06T05:08:09Z",
	}
	for k, v := range want {
		if src[k] != v {
			t.Errorf("source %s = %v, want %v", k, src[k], v)
		}
	}
	if fmt.Sprint(src["shared_with"]) != "[bob]" || fmt.Sprint(src["tags"]) != "[tax]" || len(src["embedding"].([]any)) != 8 {
		t.Errorf("source lists = %v %v %v", src["shared_with"], src["tags"], src["embedding"])
	}
	if src3 := decode(t, lines[5]); src3["embedding"] != nil || src3["created_at"] != nil || src3["ocr_text_length"] != 0.0 {
		t.Errorf("source of 3 = %v, want no embedding, no date, length 0", src3)
	}
}

func TestIndexBulkRequestError(t *testing.T) {
	_, x := newFake(t, func(r request) (int, string) {
		return 400, `{"error":{"type":"illegal_argument_exception","reason":"Malformed action/metadata line [1]"},"status":400}`
	})
	_, err := x.Index(context.Background(), []*docflow.SearchDocument{{FileID: 1}})
	if err == nil || !strings.Contains(err.Error(), "Malformed action") {
		t.Fatalf("Index error = %v, want the bulk error", err)
	}
}

func TestDeleteIgnoresNotFound(t *testing.T) {
	f, x := newFake(t, func(r request) (int, string) { return 200, bulkDeleteResponse })
	if err := x.Delete(context.Background(), []int64{1, 999}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	req := f.last(t, "/_bulk")
	if req.Body != "{\"delete\":{\"_id\":\"1\"}}\n{\"delete\":{\"_id\":\"999\"}}\n" {
		t.Errorf("delete body %q", req.Body)
	}
}

func TestSearchRequestAndResponse(t *testing.T) {
	f, x := newFake(t, func(r request) (int, string) { return 200, searchResponseBody })
	from := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(2024, 12, 31, 23, 59, 59, 0, time.UTC)
	alice := docflow.Visibility{UserID: "alice"}
	text := `invoice AND title:"x* (y`
	res, err := x.Search(context.Background(), docflow.SearchQuery{
		Text: text, MimeType: "application/pdf", DocumentType: "invoice", Language: "de", Tag: "tax",
		Sender: "Acme", TextQuality: "low", DateFrom: &from, DateTo: &to, VisibleTo: &alice, Page: 3, PerPage: 10,
	})
	if err != nil {
		t.Fatalf("Search: %v", err)
	}

	req := f.last(t, "/_search")
	if req.Path != "/docflow-files/_search" {
		t.Errorf("search path %s", req.Path)
	}
	if strings.Contains(req.Body, "query_string") {
		t.Errorf("the request uses query_string, which parses user syntax: %s", req.Body)
	}
	body := decode(t, req.Body)
	if body["from"] != 20.0 || body["size"] != 10.0 || body["track_total_hits"] != true {
		t.Errorf("from/size/track_total_hits = %v/%v/%v", body["from"], body["size"], body["track_total_hits"])
	}
	must := path(body, "query", "bool", "must").([]any)
	should := path(must[0], "bool", "should").([]any)
	fields := map[string]float64{}
	for _, s := range should {
		for field, v := range path(s, "match").(map[string]any) {
			if q := path(v, "query"); q != text {
				t.Errorf("match %s query = %v, want the text verbatim", field, q)
			}
			fields[field] = path(v, "boost").(float64)
		}
	}
	for _, fld := range []string{"ocr_text", "ocr_text.en", "ocr_text.de", "ocr_text.es", "ocr_text.fr", "ocr_text.it",
		"document_title", "document_title.de", "original_filename", "tags.text", "sender.text", "document_type.text"} {
		if _, ok := fields[fld]; !ok {
			t.Errorf("no match on %s; searched %v", fld, fields)
		}
	}
	if fields["document_title"] <= fields["ocr_text"] || fields["original_filename"] <= fields["ocr_text"] {
		t.Errorf("boosts %v: title and file name must weigh more than the text", fields)
	}
	filter, _ := json.Marshal(path(body, "query", "bool", "filter"))
	for _, want := range []string{
		`{"term":{"mime_type":"application/pdf"}}`, `{"term":{"document_type":"invoice"}}`, `{"term":{"language":"de"}}`,
		`{"term":{"tags":"tax"}}`, `{"term":{"sender":"Acme"}}`,
		`{"range":{"ocr_text_length":{"gte":1,"lt":500}}}`,
		`{"range":{"created_at":{"gte":"2024-01-01T00:00:00Z","lte":"2024-12-31T23:59:59Z"}}}`,
		`{"bool":{"minimum_should_match":1,"should":[{"term":{"owner_id":"alice"}},{"term":{"shared_with":"alice"}}]}}`,
	} {
		if !strings.Contains(string(filter), want) {
			t.Errorf("filters %s lack %s", filter, want)
		}
	}
	hl := path(body, "highlight").(map[string]any)
	if hl["encoder"] != "html" || fmt.Sprint(hl["pre_tags"]) != "[<mark>]" || fmt.Sprint(hl["post_tags"]) != "[</mark>]" {
		t.Errorf("highlight = %v", hl)
	}
	if path(hl, "fields", "document_title", "number_of_fragments") != 0.0 {
		t.Errorf("title highlight must be the whole title: %v", path(hl, "fields", "document_title"))
	}

	if res.Total != 42 || len(res.Hits) != 2 {
		t.Fatalf("result total %d, %d hits", res.Total, len(res.Hits))
	}
	h := res.Hits[0]
	if h.FileID != 7 || h.OriginalFilename != "invoice_7.pdf" || h.DocumentTitle != "<b>Invoice</b> March" ||
		h.DocumentType != "invoice" || fmt.Sprint(h.Tags) != "[tax home]" || h.Score != 3.2 {
		t.Errorf("hit = %+v", h)
	}
	if h.Formatted["document_title"] != "&lt;b&gt;<mark>Invoice</mark>&lt;&#x2F;b&gt; March" ||
		h.Formatted["ocr_text"] != "Please pay the <mark>invoice</mark> &amp; &lt;script&gt; within 30 days" {
		t.Errorf("formatted = %v", h.Formatted)
	}
	// No title highlight: the title is escaped here instead.
	if got := res.Hits[1].Formatted["document_title"]; got != "Tom &amp; Jerry &lt;3" {
		t.Errorf("fallback title = %q", got)
	}
	if res.Hits[1].Tags == nil {
		t.Error("tags must be an empty list, not null")
	}
}

func TestSearchEmptyTextAndPagePastWindow(t *testing.T) {
	f, x := newFake(t, func(r request) (int, string) {
		return 200, `{"hits":{"total":{"value":12345,"relation":"eq"},"hits":[]}}`
	})
	res, err := x.Search(context.Background(), docflow.SearchQuery{Text: "  ", Page: 100000, PerPage: 20})
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	if res.Total != 12345 || len(res.Hits) != 0 {
		t.Errorf("result %+v", res)
	}
	body := decode(t, f.last(t, "/_search").Body)
	if body["size"] != 0.0 || body["from"] != 0.0 {
		t.Errorf("past the result window: from %v size %v, want 0 0", body["from"], body["size"])
	}
	if path(body, "query", "bool", "must").([]any)[0].(map[string]any)["match_all"] == nil {
		t.Errorf("empty text must match all: %v", path(body, "query"))
	}
	if body["highlight"] != nil {
		t.Error("no highlight needed without hits")
	}
}

func TestSearchErrorStatus(t *testing.T) {
	_, x := newFake(t, func(r request) (int, string) {
		return 400, `{"error":{"root_cause":[],"type":"search_phase_execution_exception","reason":"all shards failed"},"status":400}`
	})
	_, err := x.Search(context.Background(), docflow.SearchQuery{Text: "x"})
	if err == nil || !strings.Contains(err.Error(), "search_phase_execution_exception") {
		t.Fatalf("Search error = %v", err)
	}
	if _, err := x.Search(context.Background(), docflow.SearchQuery{Text: "x", TextQuality: "great"}); err == nil {
		t.Fatal("unknown text quality accepted")
	}
}

func TestNearestRequestAndResponse(t *testing.T) {
	f, x := newFake(t, func(r request) (int, string) { return 200, knnResponseBody })
	bob := docflow.Visibility{UserID: "bob", Unclaimed: true}
	vec := []float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}
	got, err := x.Nearest(context.Background(), vec, 5, 0.5, &bob, 1, 2)
	if err != nil {
		t.Fatalf("Nearest: %v", err)
	}
	// Scores (1+cos)/2 → cos: 0.975 → 0.95, 0.8 → 0.6, 0.55 → 0.1 (below 0.5).
	if len(got) != 2 || got[0].FileID != 4 || got[1].FileID != 8 {
		t.Fatalf("neighbours = %v", got)
	}
	if d := got[0].Score - 0.95; d > 1e-9 || d < -1e-9 {
		t.Errorf("score = %v, want 0.95", got[0].Score)
	}
	body := decode(t, f.last(t, "/_search").Body)
	knn := body["knn"].(map[string]any)
	if knn["field"] != "embedding" || knn["k"] != 5.0 || knn["num_candidates"].(float64) < 5 || knn["similarity"] != 0.5 {
		t.Errorf("knn = %v", knn)
	}
	if len(knn["query_vector"].([]any)) != 8 || body["size"] != 5.0 {
		t.Errorf("query_vector / size = %v / %v", knn["query_vector"], body["size"])
	}
	filter, _ := json.Marshal(knn["filter"])
	for _, want := range []string{`{"term":{"owner_id":"bob"}}`, `{"term":{"owner_id":""}}`, `{"must_not":[{"exists":{"field":"owner_id"}}]}`,
		`{"must_not":[{"terms":{"file_id":[1,2]}}]}`} {
		if !strings.Contains(string(filter), want) {
			t.Errorf("knn filter %s lacks %s", filter, want)
		}
	}
	if _, err := x.Nearest(context.Background(), []float32{1, 2}, 5, 0, nil); err == nil {
		t.Error("a query vector of the wrong dimension was accepted")
	}
}

func TestPing(t *testing.T) {
	_, x := newFake(t, func(r request) (int, string) {
		if r.Method == http.MethodHead && r.Path == "/" {
			return 200, ""
		}
		return 500, "{}"
	})
	if err := x.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// TestContract runs the shared suite against a live cluster.
func TestContract(t *testing.T) {
	url := os.Getenv("ELASTICSEARCH_URL")
	if url == "" {
		t.Skip("ELASTICSEARCH_URL is not set: no Elasticsearch to run the contract suite against (the request/response tests above still run)")
	}
	searchtest.RunContract(t, func(t *testing.T) docflow.SearchIndex {
		ctx := context.Background()
		x, err := New(ctx, Config{
			Addresses: strings.Split(url, ","),
			IndexName: fmt.Sprintf("docflow-test-%d", rand.Uint64()),
			Dims:      searchtest.Dims,
		})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() {
			if err := x.Drop(ctx); err != nil {
				t.Errorf("Drop: %v", err)
			}
		})
		return x
	})
}
