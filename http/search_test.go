package http

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/storage/postgres"
	searchbleve "docflow/storage/search/bleve"
)

// srchEnv is a test server with the search routes mounted on a Bleve index
// in a temporary directory.
type srchEnv struct {
	*testEnv
	index docflow.SearchIndex
	bleve *searchbleve.Index
	store *postgres.SearchStore
}

// srchBroken wraps an index and fails every call while broken is set.
type srchBroken struct {
	docflow.SearchIndex
	broken atomic.Bool
}

func (b *srchBroken) Search(ctx context.Context, q docflow.SearchQuery) (*docflow.SearchResult, error) {
	if b.broken.Load() {
		return nil, errors.New("dial tcp 127.0.0.1:9200: connection refused")
	}
	return b.SearchIndex.Search(ctx, q)
}

func (b *srchBroken) Nearest(ctx context.Context, vec []float32, k int, minScore float64, visibleTo *docflow.Visibility, exclude ...int64) ([]docflow.Neighbor, error) {
	if b.broken.Load() {
		return nil, errors.New("dial tcp 127.0.0.1:9200: connection refused")
	}
	return b.SearchIndex.Nearest(ctx, vec, k, minScore, visibleTo, exclude...)
}

func newSrchEnv(t *testing.T, env map[string]string) (*srchEnv, *srchBroken) {
	t.Helper()
	idx, err := searchbleve.Open(t.TempDir(), searchbleve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	broken := &srchBroken{SearchIndex: idx}
	se := &srchEnv{index: broken, bleve: idx}
	se.testEnv = newTestEnv(t, env, func(e *testEnv) {
		se.store = postgres.NewSearchStore(e.DB)
		e.Server.MountSearch(SearchDeps{Index: broken, Store: se.store, Files: postgres.NewFileStore(e.DB)})
	})
	return se, broken
}

// srchFile is a file row of the search tests.
type srchFile struct {
	Name, Owner, Title, Text, Type, Sender, Lang, Mime string
	Tags                                               []string
	Created                                            time.Time
	Vec                                                []float32
	Status                                             string
}

// add inserts a completed file (and its embedding) and returns its id.
func (se *srchEnv) add(f srchFile) int64 {
	se.t.Helper()
	ctx := context.Background()
	if f.Status == "" {
		f.Status = docflow.StatusCompleted
	}
	if f.Mime == "" {
		f.Mime = "application/pdf"
	}
	if f.Created.IsZero() {
		f.Created = time.Now()
	}
	meta := map[string]any{"document_type": f.Type, "sender": f.Sender, "tags": f.Tags}
	if f.Tags == nil {
		meta["tags"] = []string{}
	}
	var owner, title *string
	if f.Owner != "" {
		owner = &f.Owner
	}
	if f.Title != "" {
		title = &f.Title
	}
	var id int64
	err := se.DB.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type,
		owner_id, status, ocr_text, document_title, ai_metadata, tags, language, created_at)
		VALUES (md5(random()::text), $1, 'x', 1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
		f.Name, f.Mime, owner, f.Status, f.Text, title, meta, append([]string{}, f.Tags...), f.Lang, f.Created).Scan(&id)
	if err != nil {
		se.t.Fatal(err)
	}
	if f.Vec != nil {
		if err := se.store.PutEmbedding(ctx, &docflow.Embedding{FileID: id, Model: "test", Vector: f.Vec}); err != nil {
			se.t.Fatal(err)
		}
	}
	return id
}

// indexIDs does what the indexer does for ids: Postgres state into the index.
func (se *srchEnv) indexIDs(ids ...int64) {
	se.t.Helper()
	ctx := context.Background()
	docs, err := se.store.SearchDocuments(ctx, ids)
	if err != nil {
		se.t.Fatal(err)
	}
	var list []*docflow.SearchDocument
	for _, d := range docs {
		list = append(list, d)
	}
	failed, err := se.bleve.Index(ctx, list)
	if err != nil || len(failed) > 0 {
		se.t.Fatalf("index: %v %v", failed, err)
	}
}

func (se *srchEnv) get(path, token string) (int, map[string]any) {
	se.t.Helper()
	resp, body := se.do("GET", path, token, nil)
	if resp.StatusCode >= 500 {
		se.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return resp.StatusCode, se.json(body)
}

func srchQ(params ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		v.Set(params[i], params[i+1])
	}
	return "/api/search?" + v.Encode()
}

func srchIDs(m map[string]any) []int64 {
	var out []int64
	for _, r := range m["results"].([]any) {
		out = append(out, int64(r.(map[string]any)["file_id"].(float64)))
	}
	return out
}

func TestSearchValidation(t *testing.T) {
	t.Parallel()
	se, _ := newSrchEnv(t, nil)
	se.indexIDs(se.add(srchFile{Name: "a.pdf", Text: "hello"}))
	for _, tc := range []struct {
		name   string
		params []string
		field  string
	}{
		{"missing q", nil, "q"},
		{"blank q", []string{"q", "   "}, "q"},
		{"513 characters", []string{"q", strings.Repeat("a", 513)}, "q"},
		{"513 multi-byte characters", []string{"q", strings.Repeat("é", 513)}, "q"},
		{"per_page 0", []string{"q", "x", "per_page", "0"}, "per_page"},
		{"per_page 101", []string{"q", "x", "per_page", "101"}, "per_page"},
		{"per_page not a number", []string{"q", "x", "per_page", "ten"}, "per_page"},
		{"page 0", []string{"q", "x", "page", "0"}, "page"},
		{"page negative", []string{"q", "x", "page", "-3"}, "page"},
		{"page overflow", []string{"q", "x", "page", "99999999999999999999"}, "page"},
		{"text_quality", []string{"q", "x", "text_quality", "excellent"}, "text_quality"},
		{"date_from text", []string{"q", "x", "date_from", "2024-01-01"}, "date_from"},
		{"date_to float", []string{"q", "x", "date_to", "1.5"}, "date_to"},
		{"date_to out of range", []string{"q", "x", "date_to", "999999999999999"}, "date_to"},
		{"dates reversed", []string{"q", "x", "date_from", "1700000000", "date_to", "1600000000"}, "date_from"},
		{"long filter", []string{"q", "x", "sender", strings.Repeat("s", 300)}, "sender"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := se.do("GET", srchQ(tc.params...), "", nil)
			se.expect(resp, body, 422)
			m := se.json(body)
			errs, _ := m["errors"].([]any)
			if len(errs) != 1 || errs[0].(map[string]any)["field"] != tc.field {
				t.Fatalf("body %s, want field %s", body, tc.field)
			}
		})
	}
	// Invalid UTF-8 in q.
	resp, body := se.do("GET", "/api/search?q=%ff%fe", "", nil)
	se.expect(resp, body, 422)
	// The boundaries are accepted.
	for _, q := range []string{"a", strings.Repeat("a", 512), strings.Repeat("é", 512)} {
		status, m := se.get(srchQ("q", q, "per_page", "100", "page", "1"), "")
		if status != 200 || m["query"] != q {
			t.Fatalf("q of %d characters: %d %v", len([]rune(q)), status, m["detail"])
		}
	}
}

func TestSearchResultsFiltersAndHighlights(t *testing.T) {
	t.Parallel()
	se, _ := newSrchEnv(t, nil)
	day := func(s string) time.Time { d, _ := time.Parse("2006-01-02", s); return d }
	inv := se.add(srchFile{Name: "invoice_2024.pdf", Title: "Invoice <b>March</b>", Text: "Total due: 100 EUR. <script>alert('x')</script> invoice paid",
		Type: "invoice", Sender: "Acme GmbH", Lang: "de", Tags: []string{"tax", "2024"}, Created: day("2024-03-01")})
	letter := se.add(srchFile{Name: "letter.docx", Title: "Letter", Text: strings.Repeat("dear customer we write about your invoice ", 60),
		Type: "letter", Sender: "Globex", Lang: "en", Tags: []string{"home"}, Mime: "application/msword", Created: day("2023-06-01")})
	short := se.add(srchFile{Name: "scan.png", Title: "Scan", Text: "", Type: "receipt", Created: day("2022-01-01"), Mime: "image/png"})
	syntax := se.add(srchFile{Name: "odd.pdf", Text: `weird +title:"foo" AND (bar OR baz)~2 ^3 * ? \ / [x] {y} && || ! - =`, Created: day("2024-01-01")})
	se.indexIDs(inv, letter, short, syntax)

	status, m := se.get(srchQ("q", "invoice"), "")
	if status != 200 || m["total"].(float64) != 2 || m["page"].(float64) != 1 || m["pages"].(float64) != 1 || m["query"] != "invoice" {
		t.Fatalf("search: %d %v", status, m)
	}
	// The title match ranks first; highlights are escaped HTML with <mark>.
	first := m["results"].([]any)[0].(map[string]any)
	if int64(first["file_id"].(float64)) != inv || first["original_filename"] != "invoice_2024.pdf" || first["document_type"] != "invoice" {
		t.Fatalf("first hit %v", first)
	}
	f := first["_formatted"].(map[string]any)
	title, text := f["document_title"].(string), f["ocr_text"].(string)
	if !strings.Contains(title, "<mark>Invoice</mark>") || !strings.Contains(title, "&lt;b&gt;March&lt;/b&gt;") || strings.Contains(title, "<b>") {
		t.Fatalf("formatted title %q", title)
	}
	if strings.Contains(text, "<script") || !strings.Contains(text, "&lt;script&gt;") || !strings.Contains(text, "<mark>invoice</mark>") {
		t.Fatalf("formatted text %q", text)
	}
	if tags := first["tags"].([]any); len(tags) != 2 {
		t.Fatalf("tags %v", tags)
	}

	for _, tc := range []struct {
		name   string
		params []string
		want   []int64
	}{
		{"document_type", []string{"q", "invoice", "document_type", "letter"}, []int64{letter}},
		{"sender", []string{"q", "invoice", "sender", "Acme GmbH"}, []int64{inv}},
		{"tags", []string{"q", "invoice", "tags", "tax"}, []int64{inv}},
		{"language", []string{"q", "invoice", "language", "en"}, []int64{letter}},
		{"mime_type", []string{"q", "invoice", "mime_type", "application/msword"}, []int64{letter}},
		{"text_quality high", []string{"q", "invoice", "text_quality", "high"}, []int64{letter}},
		{"text_quality low", []string{"q", "invoice", "text_quality", "low"}, []int64{inv}},
		{"text_quality no_text", []string{"q", "scan", "text_quality", "no_text"}, []int64{short}},
		{"date_from", []string{"q", "invoice", "date_from", fmt.Sprint(day("2024-01-01").Unix())}, []int64{inv}},
		{"date_to", []string{"q", "invoice", "date_to", fmt.Sprint(day("2024-01-01").Unix())}, []int64{letter}},
		{"filename", []string{"q", "2024"}, []int64{inv}},
		{"sender words", []string{"q", "globex"}, []int64{letter}},
		{"query syntax is text", []string{"q", `+title:"foo" AND (bar OR baz)~2`}, []int64{syntax}},
		{"lone syntax characters", []string{"q", `weird \ / [ ] { } ^ ~ * ? : ! " ( )`}, []int64{syntax}},
		{"only punctuation", []string{"q", `?!.,;:-"'()[]{}`}, nil},
		{"html in query", []string{"q", "<script>alert(1)</script>"}, []int64{inv}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := se.get(srchQ(tc.params...), "")
			got := srchIDs(m)
			if status != 200 || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %d %v, want %v (%v)", status, got, tc.want, m)
			}
		})
	}

	// Pagination, and a page past the end.
	status, m = se.get(srchQ("q", "invoice", "per_page", "1", "page", "2"), "")
	if status != 200 || len(srchIDs(m)) != 1 || m["pages"].(float64) != 2 || m["per_page"].(float64) != 1 {
		t.Fatalf("page 2: %v", m)
	}
	status, m = se.get(srchQ("q", "invoice", "per_page", "1", "page", "50"), "")
	if status != 200 || len(srchIDs(m)) != 0 || m["total"].(float64) != 2 {
		t.Fatalf("past the end: %v", m)
	}
	status, m = se.get(srchQ("q", "invoice", "page", "1000000"), "")
	if status != 200 || len(srchIDs(m)) != 0 {
		t.Fatalf("far past the end: %v", m)
	}

	// A file deleted after it was indexed is dropped from results.
	if _, err := se.DB.Pool.Exec(context.Background(), `DELETE FROM files WHERE id=$1`, letter); err != nil {
		t.Fatal(err)
	}
	status, m = se.get(srchQ("q", "invoice"), "")
	if got := srchIDs(m); status != 200 || len(got) != 1 || got[0] != inv || m["total"].(float64) != 1 {
		t.Fatalf("after delete: %v", m)
	}
}

func TestSearchBackendDown(t *testing.T) {
	t.Parallel()
	se, broken := newSrchEnv(t, nil)
	se.indexIDs(se.add(srchFile{Name: "a.pdf", Text: "pelican"}))
	broken.broken.Store(true)
	status, m := se.get(srchQ("q", "pelican"), "")
	if status != 200 || len(m["results"].([]any)) != 0 || m["total"].(float64) != 0 {
		t.Fatalf("down: %d %v", status, m)
	}
	broken.broken.Store(false)
	if status, m = se.get(srchQ("q", "pelican"), ""); len(srchIDs(m)) != 1 {
		t.Fatalf("back up: %v", m)
	}
	// A closed index (the embedded one after a failure) answers the same way.
	se.bleve.Close()
	if status, m = se.get(srchQ("q", "pelican"), ""); status != 200 || len(m["results"].([]any)) != 0 {
		t.Fatalf("closed: %d %v", status, m)
	}
}

func TestSearchMultiUserVisibility(t *testing.T) {
	t.Parallel()
	se, _ := newSrchEnv(t, map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true"})
	a := se.add(srchFile{Name: "a.pdf", Owner: "alice", Text: "penguin alice"})
	b := se.add(srchFile{Name: "b.pdf", Owner: "bob", Text: "penguin bob"})
	shared := se.add(srchFile{Name: "c.pdf", Owner: "bob", Text: "penguin shared"})
	if _, err := se.DB.Pool.Exec(context.Background(), `INSERT INTO shares (file_id, owner_id, shared_with_user_id, role) VALUES ($1, 'bob', 'alice', 'viewer')`, shared); err != nil {
		t.Fatal(err)
	}
	se.indexIDs(a, b, shared)
	alice, bob, admin := se.token("alice"), se.token("bob"), se.token("admin")
	resp, body := se.do("GET", srchQ("q", "penguin"), "", nil)
	se.expect(resp, body, 401)
	for _, tc := range []struct {
		token string
		want  []int64
	}{{alice, []int64{a, shared}}, {bob, []int64{b, shared}}, {admin, []int64{a, b, shared}}} {
		_, m := se.get(srchQ("q", "penguin", "per_page", "10"), tc.token)
		got := srchIDs(m)
		if len(got) != len(tc.want) || int(m["total"].(float64)) != len(tc.want) {
			t.Fatalf("got %v (total %v), want %v", got, m["total"], tc.want)
		}
		for _, w := range tc.want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		}
	}
	// Unshared since it was indexed: Postgres decides, not the stale index.
	if _, err := se.DB.Pool.Exec(context.Background(), `DELETE FROM shares WHERE file_id=$1`, shared); err != nil {
		t.Fatal(err)
	}
	if _, m := se.get(srchQ("q", "penguin"), alice); len(srchIDs(m)) != 1 {
		t.Fatalf("after unsharing: %v", m)
	}
}

func TestSearchConcurrentWithIndexing(t *testing.T) {
	t.Parallel()
	se, _ := newSrchEnv(t, nil)
	for i := range 20 {
		se.indexIDs(se.add(srchFile{Name: fmt.Sprintf("seed%d.pdf", i), Text: "albatross seed"}))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var indexed atomic.Int64
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var ids []int64
			for j := range 10 {
				ids = append(ids, se.add(srchFile{Name: fmt.Sprintf("n%d_%d.pdf", i, j), Text: "albatross fresh"}))
			}
			se.indexIDs(ids...)
			indexed.Add(int64(len(ids)))
		}
	})
	var failures atomic.Int64
	var searches sync.WaitGroup
	for i := range 100 {
		searches.Go(func() {
			q := []string{"albatross", "albatross fresh", "seed", "albatross seed fresh"}[i%4]
			resp, body := se.do("GET", srchQ("q", q, "per_page", "50"), "", nil)
			if resp.StatusCode != 200 || !strings.Contains(string(body), `"results":[{`) {
				failures.Add(1)
				t.Errorf("search %q: %d %s", q, resp.StatusCode, body)
			}
		})
	}
	searches.Wait()
	close(stop)
	wg.Wait()
	if failures.Load() > 0 || indexed.Load() == 0 {
		t.Fatalf("%d failures, %d indexed meanwhile", failures.Load(), indexed.Load())
	}
	_, m := se.get(srchQ("q", "albatross", "per_page", "1"), "")
	if int64(m["total"].(float64)) != 20+indexed.Load() {
		t.Fatalf("total %v, want %d", m["total"], 20+indexed.Load())
	}
}
