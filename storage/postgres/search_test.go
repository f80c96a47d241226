package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"docflow"
)

// srFile is a file row for the search tests.
type srFile struct {
	name, status, owner, text, title string
	meta                             string // ai_metadata JSON
}

func srInsert(t *testing.T, db *DB, f srFile) int64 {
	t.Helper()
	if f.status == "" {
		f.status = docflow.StatusCompleted
	}
	if f.meta == "" {
		f.meta = "{}"
	}
	var owner, title *string
	if f.owner != "" {
		owner = &f.owner
	}
	if f.title != "" {
		title = &f.title
	}
	var id int64
	err := db.Pool.QueryRow(context.Background(), `INSERT INTO files (filehash, original_filename, stored_filename, file_size,
		mime_type, owner_id, status, ocr_text, document_title, ai_metadata)
		VALUES (md5(random()::text), $1, 'x.pdf', 10, 'application/pdf', $2, $3, $4, $5, $6::jsonb) RETURNING id`,
		f.name, owner, f.status, f.text, title, f.meta).Scan(&id)
	if err != nil {
		t.Fatalf("insert file: %v", err)
	}
	return id
}

func srShare(t *testing.T, db *DB, fileID int64, owner, with string) {
	t.Helper()
	_, err := db.Pool.Exec(context.Background(), `INSERT INTO shares (file_id, owner_id, shared_with_user_id, role) VALUES ($1,$2,$3,'viewer')`, fileID, owner, with)
	if err != nil {
		t.Fatal(err)
	}
}

func srCode(t *testing.T, err error, code string) {
	t.Helper()
	if docflow.ErrorCode(err) != code {
		t.Fatalf("error %v (code %q), want code %q", err, docflow.ErrorCode(err), code)
	}
}

func TestSavedSearches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	s := NewSearchStore(db)

	a := &docflow.SavedSearch{OwnerID: "alice", Name: "Invoices", Filters: map[string]any{"q": "invoice", "tags": "tax"}}
	if err := s.CreateSavedSearch(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a.ID == 0 || a.CreatedAt.IsZero() {
		t.Fatalf("not filled: %+v", a)
	}
	srCode(t, s.CreateSavedSearch(ctx, &docflow.SavedSearch{OwnerID: "alice", Name: "Invoices", Filters: map[string]any{"q": "x"}}), docflow.ECONFLICT)
	// Another user may use the same name.
	if err := s.CreateSavedSearch(ctx, &docflow.SavedSearch{OwnerID: "bob", Name: "Invoices", Filters: map[string]any{"q": "x"}}); err != nil {
		t.Fatal(err)
	}
	list, err := s.FindSavedSearches(ctx, "alice")
	if err != nil || len(list) != 1 || list[0].Filters["q"] != "invoice" {
		t.Fatalf("list %v %v", list, err)
	}
	// Bob cannot see, change or delete Alice's.
	_, err = s.UpdateSavedSearch(ctx, "bob", a.ID, func(*docflow.SavedSearch) error { return nil })
	srCode(t, err, docflow.ENOTFOUND)
	srCode(t, s.DeleteSavedSearch(ctx, "bob", a.ID), docflow.ENOTFOUND)

	b := &docflow.SavedSearch{OwnerID: "alice", Name: "Receipts", Filters: map[string]any{"q": "receipt"}}
	if err := s.CreateSavedSearch(ctx, b); err != nil {
		t.Fatal(err)
	}
	_, err = s.UpdateSavedSearch(ctx, "alice", b.ID, func(ss *docflow.SavedSearch) error { ss.Name = "Invoices"; return nil })
	srCode(t, err, docflow.ECONFLICT)
	up, err := s.UpdateSavedSearch(ctx, "alice", b.ID, func(ss *docflow.SavedSearch) error {
		ss.Filters = map[string]any{"sender": "Acme"}
		return nil
	})
	if err != nil || up.Filters["sender"] != "Acme" || up.Name != "Receipts" {
		t.Fatalf("update %+v %v", up, err)
	}
	if err := s.DeleteSavedSearch(ctx, "alice", b.ID); err != nil {
		t.Fatal(err)
	}
	srCode(t, s.DeleteSavedSearch(ctx, "alice", b.ID), docflow.ENOTFOUND)
}

func TestSavedSearchLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	s := NewSearchStore(db)
	var wg sync.WaitGroup
	errs := make([]error, 70)
	for i := range errs {
		wg.Go(func() {
			errs[i] = s.CreateSavedSearch(ctx, &docflow.SavedSearch{OwnerID: "carol", Name: fmt.Sprintf("s%d", i), Filters: map[string]any{"q": "x"}})
		})
	}
	wg.Wait()
	ok, conflicts := 0, 0
	for _, err := range errs {
		switch docflow.ErrorCode(err) {
		case "":
			ok++
		case docflow.ECONFLICT:
			conflicts++
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	if ok != docflow.MaxSavedSearches || conflicts != 70-docflow.MaxSavedSearches {
		t.Fatalf("created %d, refused %d", ok, conflicts)
	}
}

func TestSearchDocuments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	s := NewSearchStore(db)
	done := srInsert(t, db, srFile{name: "a.pdf", owner: "alice", text: "hello world",
		meta: `{"title":"Meta title","document_type":"invoice","sender":"Acme","tags":["tax","home"],"language":"de"}`})
	titled := srInsert(t, db, srFile{name: "b.pdf", title: "Column title", text: "x"})
	pending := srInsert(t, db, srFile{name: "c.pdf", status: docflow.StatusPending})
	srShare(t, db, done, "alice", "bob")
	if err := s.PutEmbedding(ctx, &docflow.Embedding{FileID: done, Model: "hashing", Vector: []float32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	docs, err := s.SearchDocuments(ctx, []int64{done, titled, pending, 999999})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[pending] != nil {
		t.Fatalf("docs %v", docs)
	}
	d := docs[done]
	if d.DocumentTitle != "Meta title" || d.DocumentType != "invoice" || d.Sender != "Acme" || d.Language != "de" ||
		len(d.Tags) != 2 || d.OwnerID != "alice" || len(d.SharedWith) != 1 || d.SharedWith[0] != "bob" ||
		len(d.Embedding) != 3 || d.OCRText != "hello world" {
		t.Fatalf("doc %+v", d)
	}
	if docs[titled].DocumentTitle != "Column title" || docs[titled].Embedding != nil || docs[titled].OwnerID != "" {
		t.Fatalf("doc %+v", docs[titled])
	}

	got, last, err := s.ScanSearchDocuments(ctx, 0, 2)
	if err != nil || len(got) != 2 || last != titled {
		t.Fatalf("scan %v %d %v", got, last, err)
	}
	got, last, err = s.ScanSearchDocuments(ctx, last, 2)
	if err != nil || len(got) != 0 || last != pending {
		t.Fatalf("scan 2: %v %d %v", got, last, err)
	}
	if _, last, _ = s.ScanSearchDocuments(ctx, last, 2); last != 0 {
		t.Fatalf("scan past the end: %d", last)
	}
	if m, err := s.MaxFileID(ctx); err != nil || m != pending {
		t.Fatalf("max id %d %v", m, err)
	}

	// Embedding round trip and a missing file.
	e, err := s.FindEmbedding(ctx, done)
	if err != nil || e.Dimensions != 3 || e.Model != "hashing" || e.Vector[2] != 3 {
		t.Fatalf("embedding %+v %v", e, err)
	}
	_, err = s.FindEmbedding(ctx, titled)
	srCode(t, err, docflow.ENOTFOUND)
	srCode(t, s.PutEmbedding(ctx, &docflow.Embedding{FileID: 999999, Vector: []float32{1}}), docflow.ENOTFOUND)

	// Summaries honour visibility: titled and pending have no owner.
	who := func(id string, unclaimed bool) *docflow.Visibility {
		return &docflow.Visibility{UserID: id, Unclaimed: unclaimed}
	}
	for _, tc := range []struct {
		who  *docflow.Visibility
		want int
	}{{nil, 3}, {who("alice", false), 1}, {who("bob", false), 1}, {who("eve", false), 0},
		{who("eve", true), 2}, {who("alice", true), 3}, {who("", true), 2}, {who("", false), 0}} {
		m, err := s.FileSummaries(ctx, []int64{done, titled, pending}, tc.who)
		if err != nil || len(m) != tc.want {
			t.Fatalf("summaries for %v: %d %v", tc.who, len(m), err)
		}
	}
}

func TestSimilarityPairsAndCoverage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	s := NewSearchStore(db)
	var ids []int64
	for i := range 5 {
		owner := "alice"
		if i == 4 {
			owner = "bob"
		}
		ids = append(ids, srInsert(t, db, srFile{name: fmt.Sprintf("f%d.pdf", i), owner: owner, text: "t"}))
	}
	noText := srInsert(t, db, srFile{name: "empty.pdf", owner: "alice"})
	for _, id := range ids[:4] {
		if err := s.PutEmbedding(ctx, &docflow.Embedding{FileID: id, Model: "m", Vector: []float32{1, 0}}); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c, d, e := ids[0], ids[1], ids[2], ids[3], ids[4]
	err := s.ReplaceSimilarityPairs(ctx, map[int64][]docflow.Neighbor{
		b: {{FileID: a, Score: 0.912345}, {FileID: c, Score: 0.8}, {FileID: e, Score: 0.75}, {FileID: 999999, Score: 0.99}},
		a: {{FileID: b, Score: 0.91234}}, // the same pair from the other side
	})
	if err != nil {
		t.Fatal(err)
	}
	pairs, total, err := s.FindSimilarityPairs(ctx, docflow.SimilarityPairFilter{MinScore: 0.5, PerPage: 2, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	if total != 3 || len(pairs) != 2 || pairs[0].FileA.FileID != a || pairs[0].FileB.FileID != b || pairs[0].Score != 0.9123 ||
		pairs[1].Score != 0.8 || pairs[0].FileA.OriginalFilename != "f0.pdf" {
		t.Fatalf("pairs %d %+v", total, pairs)
	}
	pairs, _, _ = s.FindSimilarityPairs(ctx, docflow.SimilarityPairFilter{MinScore: 0.5, PerPage: 2, Page: 2})
	if len(pairs) != 1 || pairs[0].FileB.FileID != e {
		t.Fatalf("page 2 %+v", pairs)
	}
	pairs, total, _ = s.FindSimilarityPairs(ctx, docflow.SimilarityPairFilter{MinScore: 0.5, PerPage: 2, Page: 99})
	if len(pairs) != 0 || total != 3 {
		t.Fatalf("past the end %+v %d", pairs, total)
	}
	// Alice does not see the pair with Bob's file.
	alice := &docflow.Visibility{UserID: "alice"}
	_, total, _ = s.FindSimilarityPairs(ctx, docflow.SimilarityPairFilter{MinScore: 0.5, VisibleTo: alice})
	if total != 2 {
		t.Fatalf("alice's total %d", total)
	}
	_, total, _ = s.FindSimilarityPairs(ctx, docflow.SimilarityPairFilter{MinScore: 0.85})
	if total != 1 {
		t.Fatalf("threshold total %d", total)
	}
	// Replacing b's pairs drops the old ones (including those stored from a's side).
	if err := s.ReplaceSimilarityPairs(ctx, map[int64][]docflow.Neighbor{b: {{FileID: d, Score: 0.6}}}); err != nil {
		t.Fatal(err)
	}
	pairs, total, _ = s.FindSimilarityPairs(ctx, docflow.SimilarityPairFilter{MinScore: 0})
	if total != 1 || pairs[0].FileA.FileID != b || pairs[0].FileB.FileID != d {
		t.Fatalf("after replace %d %+v", total, pairs)
	}
	// Deleting a file removes its pairs (cascade).
	if _, err := db.Pool.Exec(ctx, `DELETE FROM files WHERE id=$1`, d); err != nil {
		t.Fatal(err)
	}
	s.counts.Purge()
	if _, total, _ = s.FindSimilarityPairs(ctx, docflow.SimilarityPairFilter{}); total != 0 {
		t.Fatalf("after delete %d", total)
	}

	cov, err := s.EmbeddingCoverage(ctx, nil)
	if err != nil || cov.TotalFiles != 5 || cov.FilesWithEmbedding != 3 {
		t.Fatalf("coverage %+v %v", cov, err)
	}
	cov, _ = s.EmbeddingCoverage(ctx, alice)
	if cov.TotalFiles != 4 || cov.FilesWithEmbedding != 3 {
		t.Fatalf("alice coverage %+v", cov)
	}

	st, err := s.EmbeddingStatus(ctx, a, nil)
	if err != nil || !st.HasEmbedding || st.EmbeddingDimensions != 2 || !st.HasOCRText || st.OCRTextLength != 1 {
		t.Fatalf("status %+v %v", st, err)
	}
	st, _ = s.EmbeddingStatus(ctx, noText, nil)
	if st.HasEmbedding || st.EmbeddingDimensions != 0 || st.HasOCRText {
		t.Fatalf("status %+v", st)
	}
	_, err = s.EmbeddingStatus(ctx, a, &docflow.Visibility{UserID: "bob"})
	srCode(t, err, docflow.ENOTFOUND)

	diag, err := s.EmbeddingDiagnostics(ctx, nil, 1, 2)
	if err != nil || diag.TotalFiles != 5 || diag.FilesWithOCRText != 4 || diag.FilesWithEmbedding != 3 ||
		diag.FilesMissingEmbedding != 1 || len(diag.Files) != 2 || diag.Files[0].FileID != noText || diag.Files[0].HasOCRText {
		t.Fatalf("diagnostics %+v %v", diag, err)
	}
}
