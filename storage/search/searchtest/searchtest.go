// Package searchtest is the contract every docflow.SearchIndex implementation
// passes: the embedded Bleve index always, Elasticsearch when one is
// configured.
package searchtest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"docflow"
)

// Dims is the embedding dimension the suite indexes; an implementation with
// a fixed dimension must be built with it.
const Dims = 8

// Reopener is implemented by test wrappers around indexes that persist to
// storage the test controls: Reopen closes the index and opens a new one on
// the same storage. The suite then checks that documents and embeddings
// survive a restart.
type Reopener interface {
	docflow.SearchIndex
	Reopen(t *testing.T) docflow.SearchIndex
}

// RunContract runs the suite. newIndex returns an empty index and registers
// its own cleanup.
func RunContract(t *testing.T, newIndex func(t *testing.T) docflow.SearchIndex) {
	tests := []struct {
		name string
		fn   func(t *testing.T, x docflow.SearchIndex)
	}{
		{"Ping", testPing},
		{"IndexAndSearch", testIndexAndSearch},
		{"SearchesEveryTextField", testSearchesEveryField},
		{"TitleRanksAboveBody", testTitleRanksAboveBody},
		{"Replace", testReplace},
		{"Delete", testDelete},
		{"PerDocumentErrors", testPerDocumentErrors},
		{"Filters", testFilters},
		{"TextQualityBands", testTextQuality},
		{"DateRange", testDateRange},
		{"HighlightEscapesHTML", testHighlightEscaping},
		{"HighlightFragmentOfLongText", testHighlightFragment},
		{"Visibility", testVisibility},
		{"Pagination", testPagination},
		{"QuerySyntaxIsText", testQuerySyntax},
		{"OnlyPunctuation", testOnlyPunctuation},
		{"QueryLength", func(t *testing.T, _ docflow.SearchIndex) {
			t.Skip("the 512-character limit on q is validated by GET /api/search (422), not by the index")
		}},
		{"NearestOrderAndThreshold", testNearest},
		{"NearestExcludeAndVisibility", testNearestFilters},
		{"EmbeddingRemovedOnReindex", testEmbeddingRemoved},
		{"Persistence", testPersistence},
		{"ConcurrentSearchWhileIndexing", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newIndex(t))
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

var epoch = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// doc returns a document with defaults that no test searches for.
func doc(id int64, text string) *docflow.SearchDocument {
	return &docflow.SearchDocument{
		FileID:           id,
		OriginalFilename: fmt.Sprintf("scan%d.pdf", id),
		DocumentTitle:    fmt.Sprintf("Scan %d", id),
		DocumentType:     "letter",
		Tags:             []string{"inbox"},
		Sender:           "Nobody",
		Language:         "en",
		MimeType:         "application/pdf",
		OCRText:          text,
		CreatedAt:        epoch.Add(time.Duration(id) * time.Hour),
	}
}

func mustIndex(t *testing.T, x docflow.SearchIndex, docs ...*docflow.SearchDocument) {
	t.Helper()
	failed, err := x.Index(ctx(t), docs)
	if err != nil {
		t.Fatalf("Index: %v", err)
	}
	if len(failed) > 0 {
		t.Fatalf("Index: per-document errors: %v", failed)
	}
}

func search(t *testing.T, x docflow.SearchIndex, q docflow.SearchQuery) *docflow.SearchResult {
	t.Helper()
	res, err := x.Search(ctx(t), q)
	if err != nil {
		t.Fatalf("Search(%+v): %v", q, err)
	}
	if res == nil {
		t.Fatalf("Search(%+v): nil result", q)
	}
	return res
}

func ids(res *docflow.SearchResult) []int64 {
	out := make([]int64, 0, len(res.Hits))
	for _, h := range res.Hits {
		out = append(out, h.FileID)
	}
	return out
}

func sorted(v []int64) []int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s
}

// expectIDs checks the set of hits (order ignored) and the total.
func expectIDs(t *testing.T, x docflow.SearchIndex, q docflow.SearchQuery, want ...int64) *docflow.SearchResult {
	t.Helper()
	res := search(t, x, q)
	got := sorted(ids(res))
	want = sorted(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Search(%+v) = %v, want %v", q, got, want)
	}
	if res.Total != len(want) {
		t.Fatalf("Search(%+v) total = %d, want %d", q, res.Total, len(want))
	}
	return res
}

func testPing(t *testing.T, x docflow.SearchIndex) {
	if err := x.Ping(ctx(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func testIndexAndSearch(t *testing.T, x docflow.SearchIndex) {
	d := doc(1, "The quokka crossed the road on Tuesday.")
	d.OriginalFilename = "animals.pdf"
	d.DocumentTitle = "Field notes"
	d.DocumentType = "report"
	d.Tags = []string{"wildlife", "notes"}
	mustIndex(t, x, d, doc(2, "Nothing to see here."), doc(3, "Another page about the weather."))

	res := expectIDs(t, x, docflow.SearchQuery{Text: "quokka"}, 1)
	h := res.Hits[0]
	if h.OriginalFilename != "animals.pdf" || h.DocumentTitle != "Field notes" || h.DocumentType != "report" {
		t.Errorf("hit fields = %+v", h)
	}
	if !slices.Equal(sorted64s(h.Tags), []string{"notes", "wildlife"}) {
		t.Errorf("hit tags = %v, want wildlife, notes", h.Tags)
	}
	if !strings.Contains(h.Formatted["ocr_text"], "<mark>quokka</mark>") {
		t.Errorf("ocr_text highlight = %q, want <mark>quokka</mark>", h.Formatted["ocr_text"])
	}
	if h.Formatted["document_title"] != "Field notes" {
		t.Errorf("document_title formatted = %q, want the title unchanged", h.Formatted["document_title"])
	}
	// Case does not matter.
	expectIDs(t, x, docflow.SearchQuery{Text: "QUOKKA"}, 1)
	expectIDs(t, x, docflow.SearchQuery{Text: "wombat"})
}

func sorted64s(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func testSearchesEveryField(t *testing.T, x docflow.SearchIndex) {
	a := doc(1, "plain text")
	a.DocumentTitle = "Zanzibar holiday"
	b := doc(2, "plain text")
	b.OriginalFilename = "kilimanjaro_trip-2023.pdf"
	c := doc(3, "plain text")
	c.Tags = []string{"serengeti"}
	d := doc(4, "plain text")
	d.Sender = "Ngorongoro Lodge"
	e := doc(5, "plain text")
	e.DocumentType = "itinerary"
	f := doc(6, "the masai mara in the text")
	mustIndex(t, x, a, b, c, d, e, f)

	for _, tc := range []struct {
		q  string
		id int64
	}{
		{"zanzibar", 1}, {"kilimanjaro", 2}, {"serengeti", 3}, {"ngorongoro", 4}, {"itinerary", 5}, {"masai", 6},
	} {
		expectIDs(t, x, docflow.SearchQuery{Text: tc.q}, tc.id)
	}
}

func testTitleRanksAboveBody(t *testing.T, x docflow.SearchIndex) {
	body := doc(1, "A long letter that mentions the okapi once among many other words about the zoo, feeding times and visitors.")
	title := doc(2, "Feeding times and visitors of the zoo.")
	title.DocumentTitle = "Okapi"
	mustIndex(t, x, body, title)
	res := search(t, x, docflow.SearchQuery{Text: "okapi"})
	if got := ids(res); !slices.Equal(got, []int64{2, 1}) {
		t.Fatalf("order = %v, want the title match (2) before the body match (1)", got)
	}
	if res.Hits[0].Score < res.Hits[1].Score {
		t.Errorf("scores %v < %v for a best-first order", res.Hits[0].Score, res.Hits[1].Score)
	}
}

func testReplace(t *testing.T, x docflow.SearchIndex) {
	mustIndex(t, x, doc(1, "first version mentions pelican"))
	mustIndex(t, x, doc(1, "second version mentions flamingo"))
	expectIDs(t, x, docflow.SearchQuery{Text: "pelican"})
	expectIDs(t, x, docflow.SearchQuery{Text: "flamingo"}, 1)
	expectIDs(t, x, docflow.SearchQuery{Text: "version"}, 1)
}

func testDelete(t *testing.T, x docflow.SearchIndex) {
	mustIndex(t, x, doc(1, "heron"), doc(2, "heron"))
	if err := x.Delete(ctx(t), []int64{1, 999}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	expectIDs(t, x, docflow.SearchQuery{Text: "heron"}, 2)
	if err := x.Delete(ctx(t), nil); err != nil {
		t.Fatalf("Delete(nil): %v", err)
	}
}

func vec(v ...float32) []float32 {
	out := make([]float32, Dims)
	copy(out, v)
	return out
}

func testPerDocumentErrors(t *testing.T, x docflow.SearchIndex) {
	good := doc(1, "ibis one")
	good.Embedding = vec(1, 0, 0)
	bad := doc(2, "ibis two")
	bad.Embedding = make([]float32, Dims+3)
	bad.Embedding[0] = 1
	also := doc(3, "ibis three")
	failed, err := x.Index(ctx(t), []*docflow.SearchDocument{good, bad, also})
	if err != nil {
		t.Fatalf("Index: %v", err)
	}
	if failed[2] == nil || len(failed) != 1 {
		t.Fatalf("per-document errors = %v, want one for document 2", failed)
	}
	expectIDs(t, x, docflow.SearchQuery{Text: "ibis"}, 1, 3)
}

func testFilters(t *testing.T, x docflow.SearchIndex) {
	a := doc(1, "common marmot")
	a.MimeType, a.DocumentType, a.Language, a.Tags, a.Sender = "application/pdf", "invoice", "de", []string{"tax", "home"}, "Stadtwerke"
	b := doc(2, "common marmot")
	b.MimeType, b.DocumentType, b.Language, b.Tags, b.Sender = "image/png", "receipt", "en", []string{"home"}, "Acme Corp"
	c := doc(3, "common marmot")
	c.MimeType, c.DocumentType, c.Language, c.Tags, c.Sender = "application/pdf", "receipt", "fr", []string{"travel"}, "Acme"
	mustIndex(t, x, a, b, c)

	q := func(f func(*docflow.SearchQuery)) docflow.SearchQuery {
		s := docflow.SearchQuery{Text: "marmot"}
		f(&s)
		return s
	}
	expectIDs(t, x, q(func(s *docflow.SearchQuery) {}), 1, 2, 3)
	expectIDs(t, x, q(func(s *docflow.SearchQuery) { s.MimeType = "application/pdf" }), 1, 3)
	expectIDs(t, x, q(func(s *docflow.SearchQuery) { s.DocumentType = "receipt" }), 2, 3)
	expectIDs(t, x, q(func(s *docflow.SearchQuery) { s.Language = "de" }), 1)
	expectIDs(t, x, q(func(s *docflow.SearchQuery) { s.Tag = "home" }), 1, 2)
	expectIDs(t, x, q(func(s *docflow.SearchQuery) { s.Tag = "ho" }))
	// Sender is exact: "Acme" is not "Acme Corp".
	expectIDs(t, x, q(func(s *docflow.SearchQuery) { s.Sender = "Acme" }), 3)
	expectIDs(t, x, q(func(s *docflow.SearchQuery) {
		s.MimeType = "application/pdf"
		s.DocumentType = "receipt"
		s.Tag = "travel"
	}), 3)
	expectIDs(t, x, q(func(s *docflow.SearchQuery) { s.MimeType = "text/plain" }))
}

func testTextQuality(t *testing.T, x docflow.SearchIndex) {
	// The bands count characters, not bytes: "é" is two bytes.
	text := func(n int) string { return strings.Repeat("é", n) }
	lengths := map[int64]int{1: 0, 2: 1, 3: 499, 4: 500, 5: 1999, 6: 2000, 7: 5000}
	var docs []*docflow.SearchDocument
	for id, n := range lengths {
		d := doc(id, text(n))
		d.DocumentTitle = "Lemur file"
		docs = append(docs, d)
	}
	mustIndex(t, x, docs...)
	for _, tc := range []struct {
		band string
		want []int64
	}{
		{"no_text", []int64{1}}, {"low", []int64{2, 3}}, {"medium", []int64{4, 5}}, {"high", []int64{6, 7}},
	} {
		expectIDs(t, x, docflow.SearchQuery{Text: "lemur", TextQuality: tc.band}, tc.want...)
	}
}

func testDateRange(t *testing.T, x docflow.SearchIndex) {
	var docs []*docflow.SearchDocument
	for id := int64(1); id <= 5; id++ {
		d := doc(id, "capybara")
		d.CreatedAt = epoch.AddDate(0, 0, int(id))
		docs = append(docs, d)
	}
	mustIndex(t, x, docs...)
	from, to := epoch.AddDate(0, 0, 2), epoch.AddDate(0, 0, 4)
	// Both bounds are inclusive.
	expectIDs(t, x, docflow.SearchQuery{Text: "capybara", DateFrom: &from, DateTo: &to}, 2, 3, 4)
	expectIDs(t, x, docflow.SearchQuery{Text: "capybara", DateFrom: &to}, 4, 5)
	expectIDs(t, x, docflow.SearchQuery{Text: "capybara", DateTo: &from}, 1, 2)
}

func testHighlightEscaping(t *testing.T, x docflow.SearchIndex) {
	d := doc(1, `Dear customer, <script>alert("pwned")</script> your <b>axolotl</b> & "friends" arrived.`)
	d.DocumentTitle = `<img src=x onerror=alert(1)> Axolotl report`
	mustIndex(t, x, d)
	for _, q := range []string{"axolotl", "script", "customer"} {
		res := expectIDs(t, x, docflow.SearchQuery{Text: q}, 1)
		for field, v := range res.Hits[0].Formatted {
			if strings.Contains(v, "<script") || strings.Contains(v, "<img") || strings.Contains(v, "<b>") {
				t.Errorf("query %q: %s formatted %q contains unescaped document HTML", q, field, v)
			}
			if rest := strings.ReplaceAll(strings.ReplaceAll(v, "<mark>", ""), "</mark>", ""); strings.ContainsAny(rest, "<>") {
				t.Errorf("query %q: %s formatted %q contains a tag other than <mark>", q, field, v)
			}
		}
	}
	res := search(t, x, docflow.SearchQuery{Text: "axolotl"})
	f := res.Hits[0].Formatted
	if !strings.Contains(f["ocr_text"], "&lt;b&gt;<mark>axolotl</mark>&lt;/b&gt;") {
		t.Errorf("ocr_text formatted = %q, want &lt;b&gt;<mark>axolotl</mark>&lt;/b&gt;", f["ocr_text"])
	}
	if !strings.Contains(f["ocr_text"], "&amp;") {
		t.Errorf("ocr_text formatted = %q, want & escaped", f["ocr_text"])
	}
	if !strings.Contains(f["document_title"], "&lt;img") || !strings.Contains(f["document_title"], "<mark>Axolotl</mark>") {
		t.Errorf("document_title formatted = %q, want escaped HTML and <mark>Axolotl</mark>", f["document_title"])
	}
	res = search(t, x, docflow.SearchQuery{Text: "script"})
	if !strings.Contains(res.Hits[0].Formatted["ocr_text"], "&lt;<mark>script</mark>&gt;") {
		t.Errorf("ocr_text formatted = %q, want &lt;<mark>script</mark>&gt;", res.Hits[0].Formatted["ocr_text"])
	}
}

func testHighlightFragment(t *testing.T, x docflow.SearchIndex) {
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 400) // about 10 KB
	d := doc(1, filler+"the narwhal surfaced here "+filler)
	mustIndex(t, x, d)
	res := expectIDs(t, x, docflow.SearchQuery{Text: "narwhal"}, 1)
	frag := res.Hits[0].Formatted["ocr_text"]
	if !strings.Contains(frag, "<mark>narwhal</mark>") {
		t.Fatalf("fragment %q does not mark the match", frag)
	}
	if len(frag) > 2000 {
		t.Errorf("fragment is %d bytes; want an excerpt around the match, not the whole text", len(frag))
	}
	// Without a match in the text the excerpt is still there (the
	// beginning), escaped.
	d2 := doc(2, filler)
	d2.DocumentTitle = "Beluga"
	mustIndex(t, x, d2)
	res = expectIDs(t, x, docflow.SearchQuery{Text: "beluga"}, 2)
	if frag := res.Hits[0].Formatted["ocr_text"]; !strings.Contains(frag, "lorem ipsum") || len(frag) > 2000 {
		t.Errorf("excerpt without a match = %q", frag)
	}
}

func testVisibility(t *testing.T, x docflow.SearchIndex) {
	a := doc(1, "gecko")
	a.OwnerID = "alice"
	b := doc(2, "gecko")
	b.OwnerID = "bob"
	b.SharedWith = []string{"carol", "alice"}
	c := doc(3, "gecko")
	c.OwnerID = "carol"
	u := doc(4, "gecko") // unclaimed
	mustIndex(t, x, a, b, c, u)
	who := func(s string) *docflow.Visibility { return &docflow.Visibility{UserID: s} }
	withUnclaimed := func(s string) *docflow.Visibility { return &docflow.Visibility{UserID: s, Unclaimed: true} }
	expectIDs(t, x, docflow.SearchQuery{Text: "gecko"}, 1, 2, 3, 4)
	expectIDs(t, x, docflow.SearchQuery{Text: "gecko", VisibleTo: who("alice")}, 1, 2)
	expectIDs(t, x, docflow.SearchQuery{Text: "gecko", VisibleTo: who("carol")}, 2, 3)
	expectIDs(t, x, docflow.SearchQuery{Text: "gecko", VisibleTo: who("dave")})
	// Unclaimed documents (an empty owner) for whoever may see them, and
	// for nobody else: an empty user id is nobody's.
	expectIDs(t, x, docflow.SearchQuery{Text: "gecko", VisibleTo: withUnclaimed("alice")}, 1, 2, 4)
	expectIDs(t, x, docflow.SearchQuery{Text: "gecko", VisibleTo: withUnclaimed("dave")}, 4)
	expectIDs(t, x, docflow.SearchQuery{Text: "gecko", VisibleTo: withUnclaimed("")}, 4)
	expectIDs(t, x, docflow.SearchQuery{Text: "gecko", VisibleTo: who("")})

	// Revoking a share is a re-index with the new list.
	b.SharedWith = []string{"carol"}
	mustIndex(t, x, b)
	expectIDs(t, x, docflow.SearchQuery{Text: "gecko", VisibleTo: who("alice")}, 1)
}

func testPagination(t *testing.T, x docflow.SearchIndex) {
	var docs []*docflow.SearchDocument
	for id := int64(1); id <= 25; id++ {
		docs = append(docs, doc(id, "tapir "+strings.Repeat("word ", int(id))))
	}
	mustIndex(t, x, docs...)
	seen := map[int64]bool{}
	for page, want := range map[int]int{1: 10, 2: 10, 3: 5} {
		res := search(t, x, docflow.SearchQuery{Text: "tapir", Page: page, PerPage: 10})
		if len(res.Hits) != want || res.Total != 25 {
			t.Fatalf("page %d: %d hits, total %d; want %d, 25", page, len(res.Hits), res.Total, want)
		}
		for _, id := range ids(res) {
			if seen[id] {
				t.Fatalf("page %d: document %d already on an earlier page", page, id)
			}
			seen[id] = true
		}
	}
	if len(seen) != 25 {
		t.Fatalf("pages covered %d documents, want 25", len(seen))
	}
	// Page past the end: no hits, the total still says how many there are.
	for _, page := range []int{4, 1000, math.MaxInt32} {
		res := search(t, x, docflow.SearchQuery{Text: "tapir", Page: page, PerPage: 10})
		if len(res.Hits) != 0 || res.Total != 25 {
			t.Fatalf("page %d: %d hits, total %d; want 0, 25", page, len(res.Hits), res.Total)
		}
	}
	// Page 0 and no per_page take the defaults.
	res := search(t, x, docflow.SearchQuery{Text: "tapir"})
	if len(res.Hits) != 20 || res.Total != 25 {
		t.Fatalf("defaults: %d hits, total %d; want 20, 25", len(res.Hits), res.Total)
	}
}

func testQuerySyntax(t *testing.T, x docflow.SearchIndex) {
	d := doc(1, `Order AND title:review for the toucan (2024) costs $5 - see "terms" / C++ notes`)
	other := doc(2, "unrelated")
	other.DocumentTitle, other.OriginalFilename = "Other", "other.pdf"
	mustIndex(t, x, d, other)
	for _, q := range []string{
		`toucan AND`, `title: toucan`, `"toucan`, `toucan)`, `(toucan OR`, `toucan~2`, `toucan^3`,
		`toucan*`, `/toucan/`, `+toucan -zebra`, `toucan && !zebra`, `toucan || {x} [y] <z>`,
		`toucan \ \\ : ?`, `toucan" OR "1"="1`, `toucan'; DROP TABLE files; --`, `toucan%20`, "toucan\x00",
		`NOT toucan`, `toucan AND NOT toucan`,
	} {
		res, err := x.Search(ctx(t), docflow.SearchQuery{Text: q})
		if err != nil {
			t.Errorf("Search(%q): %v; query syntax must be matched as text", q, err)
			continue
		}
		if !slices.Contains(ids(res), 1) {
			t.Errorf("Search(%q) = %v, want document 1 (the word toucan)", q, ids(res))
		}
		if slices.Contains(ids(res), 2) {
			t.Errorf("Search(%q) = %v: matched the unrelated document, so syntax was interpreted", q, ids(res))
		}
	}
	// Field syntax is not a field reference: whatever the tokenizer makes of
	// it, it is neither an error nor a search of the title field.
	for _, q := range []string{`title:toucan`, `document_title:*`, `_id:1`, `*:*`} {
		res, err := x.Search(ctx(t), docflow.SearchQuery{Text: q})
		if err != nil {
			t.Errorf("Search(%q): %v; query syntax must be matched as text", q, err)
			continue
		}
		if slices.Contains(ids(res), 2) {
			t.Errorf("Search(%q) = %v: matched the unrelated document, so syntax was interpreted", q, ids(res))
		}
	}
}

func testOnlyPunctuation(t *testing.T, x docflow.SearchIndex) {
	mustIndex(t, x, doc(1, "!!! ??? ... --- *** ((( )))"), doc(2, "words"))
	for _, q := range []string{"!!!", "?", "...", "---", "*", "()", `"`, `\`, "&&||", "<>", "~^:", "    "} {
		res, err := x.Search(ctx(t), docflow.SearchQuery{Text: q})
		if err != nil {
			t.Errorf("Search(%q): %v", q, err)
			continue
		}
		if strings.TrimSpace(q) != "" && (len(res.Hits) != 0 || res.Total != 0) {
			t.Errorf("Search(%q) = %v (total %d), want no results", q, ids(res), res.Total)
		}
	}
}

func neighbourIDs(n []docflow.Neighbor) []int64 {
	out := make([]int64, len(n))
	for i, x := range n {
		out[i] = x.FileID
	}
	return out
}

func nearest(t *testing.T, x docflow.SearchIndex, v []float32, k int, min float64, visibleTo *docflow.Visibility, exclude ...int64) []docflow.Neighbor {
	t.Helper()
	got, err := x.Nearest(ctx(t), v, k, min, visibleTo, exclude...)
	if err != nil {
		t.Fatalf("Nearest: %v", err)
	}
	for i, n := range got {
		if n.Score < 0 || n.Score > 1 || n.Score < min {
			t.Fatalf("Nearest: score %v of %d outside [max(0,%v), 1]", n.Score, n.FileID, min)
		}
		if i > 0 && got[i-1].Score < n.Score {
			t.Fatalf("Nearest: not best first: %v", got)
		}
	}
	return got
}

// vectorDocs returns documents whose embeddings have known cosines to
// (1,0,0,...): 1 → 1.0, 2 → ~0.894, 3 → ~0.707, 4 → 0, 5 → -1 (clamped to 0).
func vectorDocs() []*docflow.SearchDocument {
	embs := map[int64][]float32{
		1: vec(3, 0, 0),
		2: vec(2, 1, 0),
		3: vec(1, 1, 0),
		4: vec(0, 0, 1),
		5: vec(-1, 0, 0),
	}
	var docs []*docflow.SearchDocument
	for id := int64(1); id <= 5; id++ {
		d := doc(id, "embedded")
		d.Embedding = embs[id]
		d.OwnerID = "alice"
		docs = append(docs, d)
	}
	docs = append(docs, doc(6, "no embedding"))
	return docs
}

func testNearest(t *testing.T, x docflow.SearchIndex) {
	mustIndex(t, x, vectorDocs()...)
	q := vec(1, 0, 0)
	got := nearest(t, x, q, 3, 0, nil)
	if !slices.Equal(neighbourIDs(got), []int64{1, 2, 3}) {
		t.Fatalf("Nearest k=3 = %v, want 1, 2, 3", got)
	}
	for i, want := range []float64{1, 2 / math.Sqrt(5), 1 / math.Sqrt2} {
		if math.Abs(got[i].Score-want) > 1e-3 {
			t.Errorf("score of %d = %v, want %v", got[i].FileID, got[i].Score, want)
		}
	}
	got = nearest(t, x, q, 10, 0.8, nil)
	if !slices.Equal(neighbourIDs(got), []int64{1, 2}) {
		t.Errorf("Nearest threshold 0.8 = %v, want 1, 2", got)
	}
	got = nearest(t, x, q, 10, 0, nil)
	if len(got) > 5 || !slices.Equal(neighbourIDs(got)[:3], []int64{1, 2, 3}) {
		t.Errorf("Nearest all = %v, want 1, 2, 3 first and never the document without an embedding", got)
	}
	// Scale does not matter (cosine), and k limits.
	got = nearest(t, x, vec(10, 0, 0), 1, 0, nil)
	if !slices.Equal(neighbourIDs(got), []int64{1}) {
		t.Errorf("Nearest k=1 = %v, want 1", got)
	}
	if got := nearest(t, x, q, 5, 0.9999, nil); !slices.Equal(neighbourIDs(got), []int64{1}) {
		t.Errorf("Nearest threshold 0.9999 = %v, want 1", got)
	}
}

func testNearestFilters(t *testing.T, x docflow.SearchIndex) {
	docs := vectorDocs()
	docs[1].OwnerID = "bob"                                        // document 2
	docs[2].OwnerID, docs[2].SharedWith = "bob", []string{"alice"} // document 3
	docs[3].OwnerID = ""                                           // document 4: unclaimed
	mustIndex(t, x, docs...)
	q := vec(1, 0, 0)
	if got := nearest(t, x, q, 2, 0, nil, 1); !slices.Equal(neighbourIDs(got), []int64{2, 3}) {
		t.Errorf("Nearest excluding 1 = %v, want 2, 3", got)
	}
	if got := nearest(t, x, q, 3, 0.5, nil, 1, 2); !slices.Equal(neighbourIDs(got), []int64{3}) {
		t.Errorf("Nearest excluding 1, 2 = %v, want 3", got)
	}
	alice := &docflow.Visibility{UserID: "alice"}
	if got := nearest(t, x, q, 3, 0.5, alice); !slices.Equal(neighbourIDs(got), []int64{1, 3}) {
		t.Errorf("Nearest visible to alice = %v, want 1, 3", got)
	}
	bob := &docflow.Visibility{UserID: "bob"}
	if got := nearest(t, x, q, 3, 0.5, bob); !slices.Equal(neighbourIDs(got), []int64{2, 3}) {
		t.Errorf("Nearest visible to bob = %v, want 2, 3", got)
	}
	// Document 4 (orthogonal to q) is the unclaimed one.
	q4 := vec(0, 0, 1)
	if got := nearest(t, x, q4, 1, 0.5, alice); len(got) != 0 {
		t.Errorf("Nearest unclaimed, visible to alice = %v, want none", got)
	}
	if got := nearest(t, x, q4, 1, 0.5, &docflow.Visibility{UserID: "carol", Unclaimed: true}); !slices.Equal(neighbourIDs(got), []int64{4}) {
		t.Errorf("Nearest unclaimed, unclaimed visible to carol = %v, want 4", got)
	}
	if got := nearest(t, x, q, 5, 0, &docflow.Visibility{}); len(got) != 0 {
		t.Errorf("Nearest visible to nobody = %v, want none", got)
	}
}

func testEmbeddingRemoved(t *testing.T, x docflow.SearchIndex) {
	mustIndex(t, x, vectorDocs()...)
	d := doc(1, "embedded")
	mustIndex(t, x, d) // re-indexed without an embedding
	got := nearest(t, x, vec(1, 0, 0), 2, 0.5, nil)
	if !slices.Equal(neighbourIDs(got), []int64{2, 3}) {
		t.Errorf("Nearest after removing 1's embedding = %v, want 2, 3", got)
	}
	if err := x.Delete(ctx(t), []int64{2}); err != nil {
		t.Fatal(err)
	}
	got = nearest(t, x, vec(1, 0, 0), 2, 0.5, nil)
	if !slices.Equal(neighbourIDs(got), []int64{3}) {
		t.Errorf("Nearest after deleting 2 = %v, want 3", got)
	}
}

func testPersistence(t *testing.T, x docflow.SearchIndex) {
	r, ok := x.(Reopener)
	if !ok {
		t.Skip("this index's storage is not owned by the test; nothing to reopen")
	}
	docs := vectorDocs()
	docs[0].OCRText = "persisted platypus"
	mustIndex(t, x, docs...)
	if err := x.Delete(ctx(t), []int64{3}); err != nil {
		t.Fatal(err)
	}
	y := r.Reopen(t)
	expectIDs(t, y, docflow.SearchQuery{Text: "platypus"}, 1)
	got := nearest(t, y, vec(1, 0, 0), 3, 0.5, nil)
	if !slices.Equal(neighbourIDs(got), []int64{1, 2}) {
		t.Errorf("Nearest after reopen = %v, want 1, 2", got)
	}
	if got := nearest(t, y, vec(1, 0, 0), 1, 0, &docflow.Visibility{UserID: "alice"}); !slices.Equal(neighbourIDs(got), []int64{1}) {
		t.Errorf("Nearest visible to alice after reopen = %v, want 1", got)
	}
}

func testConcurrent(t *testing.T, x docflow.SearchIndex) {
	const batches, perBatch, searchers = 20, 10, 100
	mustIndex(t, x, doc(100000, "wallaby seed"))
	c := ctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, searchers+1)
	wg.Go(func() {
		for b := range batches {
			var docs []*docflow.SearchDocument
			for i := range perBatch {
				d := doc(int64(b*perBatch+i+1), fmt.Sprintf("wallaby number %d", b*perBatch+i))
				d.Embedding = vec(float32(i+1), float32(b+1), 1)
				docs = append(docs, d)
			}
			if failed, err := x.Index(c, docs); err != nil || len(failed) > 0 {
				errs <- fmt.Errorf("Index batch %d: %v %v", b, err, failed)
				return
			}
		}
	})
	for i := range searchers {
		wg.Go(func() {
			res, err := x.Search(c, docflow.SearchQuery{Text: "wallaby", Page: 1 + i%3, PerPage: 5})
			if err != nil {
				errs <- fmt.Errorf("Search %d: %w", i, err)
				return
			}
			if res.Total < 1 {
				errs <- fmt.Errorf("Search %d: total %d, want at least the seed document", i, res.Total)
				return
			}
			if i%10 == 0 {
				if _, err := x.Nearest(c, vec(1, 1, 1), 5, 0, nil); err != nil {
					errs <- fmt.Errorf("Nearest %d: %w", i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	res := search(t, x, docflow.SearchQuery{Text: "wallaby"})
	if res.Total != batches*perBatch+1 {
		t.Errorf("after indexing: total %d, want %d", res.Total, batches*perBatch+1)
	}
}
