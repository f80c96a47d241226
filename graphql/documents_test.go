package graphql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"docflow"
)

// A list of documents reads brief records unless aiMetadata is asked
// for: every other field answers the same either way, and aiMetadata is
// the stored metadata.
func TestDocumentsAnswerTheSameFromBriefRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 5, nil)
	ctx := context.Background()
	var pipeline int64
	if err := e.db.Pool.QueryRow(ctx, `SELECT min(id) FROM pipelines`).Scan(&pipeline); err != nil {
		t.Fatal(err)
	}
	title, score, original := "An invoice", 0.75, int64(1)
	if _, err := e.files.UpdateFile(ctx, 3, func(f *docflow.File) error {
		f.DocumentTitle, f.OCRQualityScore, f.Language, f.PipelineID = &title, &score, "de", &pipeline
		f.AIMetadata = map[string]any{"document_type": "invoice", "tags": []any{"tax"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.files.UpdateFile(ctx, 4, func(f *docflow.File) error {
		f.Status, f.DuplicateOf = docflow.StatusDuplicate, &original
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const fields = `id originalFilename mimeType fileSize documentTitle createdAt updatedAt ownerId pipelineId
		status isDuplicate duplicateOf ocrQualityScore language processingStatus { status totalSteps }`
	brief, _ := e.run(admin, `{ documents(limit: 10) { `+fields+` } }`, nil)
	full, _ := e.run(admin, `{ documents(limit: 10) { `+fields+` aiMetadata } }`, nil)
	if len(brief.Errors)+len(full.Errors) > 0 {
		t.Fatalf("errors: %v %v", brief.Errors, full.Errors)
	}
	var withMeta []map[string]any
	if err := json.Unmarshal(full.Data["documents"], &withMeta); err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	for _, d := range withMeta {
		if d["id"] == float64(3) {
			meta, _ = d["aiMetadata"].(map[string]any)
		}
		delete(d, "aiMetadata")
	}
	if meta["document_type"] != "invoice" {
		t.Fatalf("document 3's aiMetadata %v: want the stored metadata", meta)
	}
	stripped, err := json.Marshal(withMeta)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(brief.Data["documents"], &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(stripped, &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("without aiMetadata:\n%s\nwith it (less aiMetadata):\n%s", ja, jb)
	}
	for _, want := range []string{`"documentTitle":"An invoice"`, `"language":"de"`, `"ocrQualityScore":0.75`,
		fmt.Sprintf(`"pipelineId":%d`, pipeline), `"duplicateOf":1`, `"isDuplicate":true`, `"ownerId":"bob@example.com"`} {
		if !strings.Contains(string(ja), want) {
			t.Fatalf("the brief answer %s lacks %s", ja, want)
		}
	}
}

// Lists of documents read into arrays that requests reuse: requests at
// the same time, each with two lists, still answer each its own.
func TestConcurrentListsAnswerEachTheirOwn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 60, nil)
	query := func(off int) string {
		return fmt.Sprintf(`{ a: documents(limit: 10, offset: %d) { id originalFilename } b: documents(limit: 3, offset: %d) { id documentTitle } }`, off, off+20)
	}
	want := map[int]string{}
	for off := range 8 {
		r, _ := e.run(admin, query(off), nil)
		if len(r.Errors) > 0 {
			t.Fatal(r.Errors)
		}
		want[off] = string(r.Data["a"]) + string(r.Data["b"])
	}
	if want[0] == want[1] {
		t.Fatalf("offsets 0 and 1 answered alike: %s", want[0])
	}
	var wg sync.WaitGroup
	for off := range 8 {
		wg.Go(func() {
			for range 20 {
				r, _ := e.run(admin, query(off), nil)
				if got := string(r.Data["a"]) + string(r.Data["b"]); len(r.Errors) > 0 || got != want[off] {
					t.Errorf("offset %d: %s (errors %v), want %s", off, got, r.Errors, want[off])
					return
				}
			}
		})
	}
	wg.Wait()
}
