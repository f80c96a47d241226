package graphql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
