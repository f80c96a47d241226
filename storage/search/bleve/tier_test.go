package bleve_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"docflow"
	"docflow/storage/search/bleve"
)

// tierCorpus: 1-5 have "kestrel" in the title (5 also both words in the
// text), 6-15 have "kestrel" and "falcon" in the text, 16-40 only "kestrel"
// in the text; 41-45 have neither. Owners alternate so visibility filters
// select half.
func tierCorpus(t *testing.T, x *bleve.Index) {
	t.Helper()
	var docs []*docflow.SearchDocument
	for id := int64(1); id <= 45; id++ {
		d := &docflow.SearchDocument{FileID: id, DocumentTitle: fmt.Sprintf("Doc %d", id), OriginalFilename: "scan.pdf",
			OwnerID: []string{"ann", "ben"}[id%2], OCRText: "plain words"}
		switch {
		case id <= 5:
			d.DocumentTitle = "Kestrel sighting"
			if id == 5 {
				d.OCRText = "a kestrel and a falcon overhead"
			}
		case id <= 15:
			d.OCRText = "a kestrel and a falcon"
		case id <= 40:
			d.OCRText = "a kestrel on a post"
		}
		if id == 45 {
			d.OwnerID = "cat"
		}
		docs = append(docs, d)
	}
	if failed, err := x.Index(context.Background(), docs); err != nil || len(failed) > 0 {
		t.Fatalf("Index: %v %v", err, failed)
	}
}

func TestTieredRanking(t *testing.T) {
	x, err := bleve.Open(t.TempDir(), bleve.Options{ExactLimit: 3, TotalCap: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	tierCorpus(t, x)
	ctx := context.Background()

	var got []int64
	for page := 1; page <= 6; page++ {
		res, err := x.Search(ctx, docflow.SearchQuery{Text: "kestrel falcon", Page: page, PerPage: 7})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 40 || res.TotalCapped {
			t.Fatalf("page %d: total %d capped %v, want 40 exact", page, res.Total, res.TotalCapped)
		}
		for _, h := range res.Hits {
			got = append(got, h.FileID)
		}
		if page == 6 && len(res.Hits) != 5 {
			t.Errorf("last page has %d hits, want 5", len(res.Hits))
		}
	}
	if len(got) != 40 {
		t.Fatalf("pages returned %d documents, want 40: %v", len(got), got)
	}
	// Every word and a title match, every word, some word in the title,
	// some word in the text.
	tierOf := func(id int64) int {
		switch {
		case id == 5:
			return 0
		case id >= 6 && id <= 15:
			return 1
		case id <= 4:
			return 2
		}
		return 3
	}
	for i := 1; i < len(got); i++ {
		if tierOf(got[i-1]) > tierOf(got[i]) {
			t.Fatalf("order %v: %d (tier %d) before %d (tier %d)", got, got[i-1], tierOf(got[i-1]), got[i], tierOf(got[i]))
		}
	}
	s := slices.Clone(got)
	slices.Sort(s)
	if len(slices.Compact(s)) != 40 {
		t.Fatalf("duplicates across pages: %v", got)
	}
	// A page past the end is empty.
	res, err := x.Search(ctx, docflow.SearchQuery{Text: "kestrel falcon", Page: 7, PerPage: 7})
	if err != nil || len(res.Hits) != 0 || res.Total != 40 {
		t.Fatalf("page past the end: %v %+v", err, res)
	}
}

func TestTieredTotalCap(t *testing.T) {
	x, err := bleve.Open(t.TempDir(), bleve.Options{ExactLimit: 3, TotalCap: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	tierCorpus(t, x)
	ctx := context.Background()
	ann := docflow.Visibility{UserID: "ann"}
	// Broad text, broad filter: counted up to the cap.
	res, err := x.Search(ctx, docflow.SearchQuery{Text: "kestrel", VisibleTo: &ann, PerPage: 50})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 10 || !res.TotalCapped {
		t.Errorf("total %d capped %v, want 10 capped", res.Total, res.TotalCapped)
	}
	for _, h := range res.Hits {
		if h.FileID%2 != 0 || h.FileID > 40 {
			t.Errorf("hit %d is not ann's or does not match", h.FileID)
		}
	}
	if len(res.Hits) != 20 {
		t.Errorf("%d hits, want all 20 of ann's matches even though the count stopped at 10", len(res.Hits))
	}
	// Without filters the commonest term's frequency is a better lower
	// bound than the cap.
	res, err = x.Search(ctx, docflow.SearchQuery{Text: "kestrel"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 36 || !res.TotalCapped {
		t.Errorf("total %d capped %v, want 36 (kestrel in the text) capped", res.Total, res.TotalCapped)
	}
	// A selective filter makes the query exact again: cat owns one document.
	cat := docflow.Visibility{UserID: "cat"}
	res, err = x.Search(ctx, docflow.SearchQuery{Text: "kestrel plain", VisibleTo: &cat})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 1 || res.TotalCapped || len(res.Hits) != 1 || res.Hits[0].FileID != 45 {
		t.Errorf("selective filter: %+v", res)
	}
	// Empty text with a broad filter lists in index order, counted to the cap.
	res, err = x.Search(ctx, docflow.SearchQuery{VisibleTo: &ann, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 22 || res.Total != 10 || !res.TotalCapped {
		t.Errorf("empty text: %d hits, total %d capped %v; want 22, 10, capped", len(res.Hits), res.Total, res.TotalCapped)
	}
}
