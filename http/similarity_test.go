package http

import (
	"context"
	"fmt"
	"testing"

	"docflow"
)

func srchSimilar(m map[string]any) ([]int64, []float64) {
	var ids []int64
	var scores []float64
	for _, d := range m["similar_documents"].([]any) {
		d := d.(map[string]any)
		ids = append(ids, int64(d["file_id"].(float64)))
		scores = append(scores, d["similarity_score"].(float64))
	}
	return ids, scores
}

func TestSimilarDocuments(t *testing.T) {
	t.Parallel()
	se, broken := newSrchEnv(t, nil)
	x := se.add(srchFile{Name: "x.pdf", Text: "x", Vec: []float32{1, 0, 0, 0}})
	y := se.add(srchFile{Name: "y.pdf", Title: "Y title", Text: "y", Vec: []float32{1, 1, 0, 0}})    // cos 0.70710678
	z := se.add(srchFile{Name: "z.pdf", Text: "z", Vec: []float32{1, 0.2, 0, 0}, Mime: "image/png"}) // cos 0.98058068
	w := se.add(srchFile{Name: "w.pdf", Text: "w", Vec: []float32{0, 1, 0, 0}})                      // cos 0
	v := se.add(srchFile{Name: "v.pdf", Text: "v", Vec: []float32{-1, 0, 0, 0}})                     // cos -1, clamped to 0
	gone := se.add(srchFile{Name: "gone.pdf", Text: "g", Vec: []float32{1, 0.1, 0, 0}})              // cos 0.995
	noVec := se.add(srchFile{Name: "novec.pdf", Text: "n"})
	se.indexIDs(x, y, z, w, v, gone, noVec)
	// Deleted after it was indexed: never shown.
	if _, err := se.DB.Pool.Exec(context.Background(), `DELETE FROM files WHERE id=$1`, gone); err != nil {
		t.Fatal(err)
	}

	status, m := se.get(fmt.Sprintf("/api/files/%d/similar", x), "")
	ids, scores := srchSimilar(m)
	if status != 200 || fmt.Sprint(ids) != fmt.Sprint([]int64{z, y}) || fmt.Sprint(scores) != "[0.9806 0.7071]" ||
		m["count"].(float64) != 2 || int64(m["file_id"].(float64)) != x || m["message"] != nil {
		t.Fatalf("similar: %d %v", status, m)
	}
	first := m["similar_documents"].([]any)[0].(map[string]any)
	if first["original_filename"] != "z.pdf" || first["mime_type"] != "image/png" || first["created_at"] == nil || first["document_title"] != nil {
		t.Fatalf("document %v", first)
	}
	if second := m["similar_documents"].([]any)[1].(map[string]any); second["document_title"] != "Y title" {
		t.Fatalf("document %v", second)
	}
	_, m = se.get(fmt.Sprintf("/api/files/%d/similar?limit=1", x), "")
	if ids, _ := srchSimilar(m); fmt.Sprint(ids) != fmt.Sprint([]int64{z}) {
		t.Fatalf("limit 1: %v", m)
	}
	_, m = se.get(fmt.Sprintf("/api/files/%d/similar?threshold=0.8", x), "")
	if ids, _ := srchSimilar(m); fmt.Sprint(ids) != fmt.Sprint([]int64{z}) {
		t.Fatalf("threshold 0.8: %v", m)
	}
	_, m = se.get(fmt.Sprintf("/api/files/%d/similar?threshold=0&limit=20", x), "")
	ids, scores = srchSimilar(m)
	if fmt.Sprint(ids) != fmt.Sprint([]int64{z, y, w, v}) || fmt.Sprint(scores) != "[0.9806 0.7071 0 0]" {
		t.Fatalf("threshold 0: %v %v", ids, scores)
	}
	_, m = se.get(fmt.Sprintf("/api/files/%d/similar?threshold=1", x), "")
	if ids, _ := srchSimilar(m); len(ids) != 0 {
		t.Fatalf("threshold 1: %v", m)
	}

	// No embedding yet: a message, not an error.
	status, m = se.get(fmt.Sprintf("/api/files/%d/similar", noVec), "")
	if status != 200 || m["message"] == nil || m["count"].(float64) != 0 || len(m["similar_documents"].([]any)) != 0 {
		t.Fatalf("no embedding: %d %v", status, m)
	}

	for _, q := range []string{"limit=0", "limit=21", "limit=abc", "threshold=-0.1", "threshold=1.5", "threshold=NaN", "threshold=abc"} {
		resp, body := se.do("GET", fmt.Sprintf("/api/files/%d/similar?%s", x, q), "", nil)
		se.expect(resp, body, 422)
	}
	resp, body := se.do("GET", "/api/files/999999/similar", "", nil)
	se.expect(resp, body, 404)
	resp, body = se.do("GET", fmt.Sprintf("/api/files/%d/similar", gone), "", nil)
	se.expect(resp, body, 404)
	resp, body = se.do("GET", "/api/files/abc/similar", "", nil)
	se.expect(resp, body, 422)

	broken.broken.Store(true)
	resp, body = se.do("GET", fmt.Sprintf("/api/files/%d/similar", x), "", nil)
	se.expect(resp, body, 500)
}

func TestSimilarRespectsVisibility(t *testing.T) {
	t.Parallel()
	se, _ := newSrchEnv(t, map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true"})
	a := se.add(srchFile{Name: "a.pdf", Owner: "alice", Text: "a", Vec: []float32{1, 0}})
	a2 := se.add(srchFile{Name: "a2.pdf", Owner: "alice", Text: "a", Vec: []float32{1, 0.1}})
	b := se.add(srchFile{Name: "b.pdf", Owner: "bob", Text: "b", Vec: []float32{1, 0.05}})
	se.indexIDs(a, a2, b)
	alice, bob := se.token("alice"), se.token("bob")
	_, m := se.get(fmt.Sprintf("/api/files/%d/similar", a), alice)
	if ids, _ := srchSimilar(m); fmt.Sprint(ids) != fmt.Sprint([]int64{a2}) {
		t.Fatalf("alice sees %v", m)
	}
	resp, body := se.do("GET", fmt.Sprintf("/api/files/%d/similar", a), bob, nil)
	se.expect(resp, body, 403)
	resp, body = se.do("GET", fmt.Sprintf("/api/files/%d/embedding-status", a), bob, nil)
	se.expect(resp, body, 403)
	_, m = se.get("/api/diagnostic/embeddings", bob)
	if m["total_files"].(float64) != 1 {
		t.Fatalf("bob's diagnostics %v", m)
	}
}

func TestSimilarityPairsAPI(t *testing.T) {
	t.Parallel()
	se, _ := newSrchEnv(t, nil)
	var ids []int64
	for i := range 6 {
		var vec []float32
		if i < 4 {
			vec = []float32{1, float32(i)}
		}
		ids = append(ids, se.add(srchFile{Name: fmt.Sprintf("p%d.pdf", i), Text: "t", Vec: vec}))
	}
	err := se.store.ReplaceSimilarityPairs(context.Background(), map[int64][]docflow.Neighbor{
		ids[0]: {{FileID: ids[1], Score: 0.95}, {FileID: ids[2], Score: 0.8}, {FileID: ids[3], Score: 0.6}},
		ids[1]: {{FileID: ids[2], Score: 0.71234567}},
	})
	if err != nil {
		t.Fatal(err)
	}
	status, m := se.get("/api/similarity/pairs", "")
	if status != 200 || m["total_pairs"].(float64) != 3 || m["threshold"].(float64) != 0.7 || m["page"].(float64) != 1 ||
		m["pages"].(float64) != 1 || m["per_page"].(float64) != 50 {
		t.Fatalf("pairs: %v", m)
	}
	cov := m["embedding_coverage"].(map[string]any)
	if cov["total_files"].(float64) != 6 || cov["files_with_embedding"].(float64) != 4 {
		t.Fatalf("coverage %v", cov)
	}
	pairs := m["pairs"].([]any)
	p0 := pairs[0].(map[string]any)
	fa, fb := p0["file_a"].(map[string]any), p0["file_b"].(map[string]any)
	if p0["similarity_score"].(float64) != 0.95 || int64(fa["file_id"].(float64)) != ids[0] || int64(fb["file_id"].(float64)) != ids[1] ||
		fa["original_filename"] != "p0.pdf" || fa["mime_type"] == nil || fa["created_at"] == nil {
		t.Fatalf("first pair %v", p0)
	}
	if s := pairs[2].(map[string]any)["similarity_score"].(float64); s != 0.7123 {
		t.Fatalf("rounded score %v", s)
	}
	_, m = se.get("/api/similarity/pairs?threshold=0.5&limit=2&page=2", "")
	if m["total_pairs"].(float64) != 4 || m["pages"].(float64) != 2 || len(m["pairs"].([]any)) != 2 {
		t.Fatalf("page 2: %v", m)
	}
	_, m = se.get("/api/similarity/pairs?page=9", "")
	if len(m["pairs"].([]any)) != 0 || m["total_pairs"].(float64) != 3 {
		t.Fatalf("past the end: %v", m)
	}
	for _, q := range []string{"threshold=1.01", "threshold=-1", "threshold=x", "limit=0", "limit=201", "page=0", "page=x"} {
		resp, body := se.do("GET", "/api/similarity/pairs?"+q, "", nil)
		se.expect(resp, body, 422)
	}
}

func TestEmbeddingStatusAndDiagnostics(t *testing.T) {
	t.Parallel()
	se, _ := newSrchEnv(t, nil)
	with := se.add(srchFile{Name: "with.pdf", Text: "héllo", Vec: []float32{1, 2, 3}})
	textOnly := se.add(srchFile{Name: "text.pdf", Text: "some text"})
	empty := se.add(srchFile{Name: "empty.pdf"})

	status, m := se.get(fmt.Sprintf("/api/files/%d/embedding-status", with), "")
	if status != 200 || m["has_embedding"] != true || m["embedding_dimensions"].(float64) != 3 || m["has_ocr_text"] != true ||
		m["ocr_text_length"].(float64) != 5 || int64(m["file_id"].(float64)) != with {
		t.Fatalf("status: %v", m)
	}
	_, m = se.get(fmt.Sprintf("/api/files/%d/embedding-status", empty), "")
	if m["has_embedding"] != false || m["embedding_dimensions"].(float64) != 0 || m["has_ocr_text"] != false {
		t.Fatalf("empty status: %v", m)
	}
	resp, body := se.do("GET", "/api/files/999999/embedding-status", "", nil)
	se.expect(resp, body, 404)

	status, m = se.get("/api/diagnostic/embeddings", "")
	if status != 200 || m["total_files"].(float64) != 3 || m["files_with_ocr_text"].(float64) != 2 ||
		m["files_with_embedding"].(float64) != 1 || m["files_missing_embedding"].(float64) != 1 || len(m["files"].([]any)) != 3 {
		t.Fatalf("diagnostics: %v", m)
	}
	first := m["files"].([]any)[0].(map[string]any)
	if int64(first["file_id"].(float64)) != empty || first["original_filename"] != "empty.pdf" || first["has_ocr_text"] != false || first["has_embedding"] != false {
		t.Fatalf("first row %v", first)
	}
	_, m = se.get("/api/diagnostic/embeddings?per_page=1&page=2", "")
	if rows := m["files"].([]any); len(rows) != 1 || int64(rows[0].(map[string]any)["file_id"].(float64)) != textOnly || m["pages"].(float64) != 3 {
		t.Fatalf("page 2: %v", m)
	}
	resp, body = se.do("GET", "/api/diagnostic/embeddings?per_page=0", "", nil)
	se.expect(resp, body, 422)
}
