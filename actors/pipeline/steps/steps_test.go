package steps

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/internal/corpus"
)

func TestCatalogueCovered(t *testing.T) {
	fx := newFixture(t, nil)
	for _, typ := range []string{docflow.StepConvertToPDF, docflow.StepOCR, docflow.StepExtractMetadata,
		docflow.StepClassify, docflow.StepEmbedMetadata, docflow.StepComputeEmbedding} {
		if fx.byType[typ] == nil {
			t.Fatalf("no step %s", typ)
		}
		if _, ok := docflow.StepCatalogue()[typ]; !ok {
			t.Fatalf("step %s is not in the catalogue", typ)
		}
	}
	if _, err := New(Deps{}); err == nil {
		t.Fatal("New without dependencies succeeded")
	}
}

// New builds every standard step, once each: the one set internal/app
// registers.
func TestNewBuildsTheStandardSteps(t *testing.T) {
	fx := newFixture(t, nil)
	var types []string
	for _, s := range fx.steps.All() {
		types = append(types, s.Type())
	}
	want := append([]string(nil), docflow.StandardSteps...)
	slices.Sort(types)
	slices.Sort(want)
	if !slices.Equal(types, want) {
		t.Fatalf("New builds %v, want the standard steps %v", types, want)
	}
	if _, err := New(Deps{Settings: fx.settings, Rules: staticRules(nil)}); err == nil {
		t.Fatal("New without Originals succeeded")
	}
}

// TestHostileInput: each bad document fails its step at once (EINVALID)
// with a message that says what is wrong.
func TestHostileInput(t *testing.T) {
	corpus.RequireTools(t, "pdfinfo", "img2pdf")
	c := sharedCorpus(t)
	fx := newFixture(t, nil)
	for name, want := range map[string]string{
		"corrupt.pdf":    "corrupt",
		"encrypted.pdf":  "password",
		"zero_pages.pdf": "no pages",
		"bomb.png":       "pixels",
		"zipbomb.docx":   "",
	} {
		s := c.Get(name)
		f := fx.file(s.Path, s.MimeType)
		_, err := fx.run(docflow.StepConvertToPDF, f, nil, nil)
		if docflow.ErrorCode(err) != docflow.EINVALID {
			t.Fatalf("%s: want EINVALID, got %v", name, err)
		}
		if msg := docflow.ErrorMessage(err); !strings.Contains(strings.ToLower(msg), want) {
			t.Fatalf("%s: message %q lacks %q", name, msg, want)
		}
		t.Logf("%s refused: %s", name, docflow.ErrorMessage(err))
		if f.ProcessedBlob != "" {
			t.Fatalf("%s: a processed version was recorded", name)
		}
		// The OCR step refuses the same PDFs when convert_to_pdf is not
		// in the pipeline.
		if strings.HasSuffix(name, ".pdf") {
			if _, err := fx.run(docflow.StepOCR, f, nil, nil); docflow.ErrorCode(err) != docflow.EINVALID {
				t.Fatalf("ocr on %s: %v", name, err)
			}
		}
	}
}

// TestLibreOfficeHang: a conversion that hangs is killed at
// LIBREOFFICE_TIMEOUT and the next conversion of the worker works.
func TestLibreOfficeHang(t *testing.T) {
	corpus.RequireTools(t, "pdfinfo")
	c := sharedCorpus(t)
	bin := t.TempDir()
	// A soffice that hangs on files holding the marker and otherwise
	// "converts" by writing a known PDF where LibreOffice would. The real
	// LibreOffice after a killed one (its discarded profile, a fresh
	// start) is processing/convert's TestLibreOfficeHangIsKilled; here the
	// step's side counts: the timeout's error code and the slot given back.
	script := fmt.Sprintf(`#!/bin/sh
out=""; prev=""
for a in "$@"; do
  if [ "$prev" = "--outdir" ]; then out="$a"; fi
  if [ -f "$a" ] && grep -q HANG-MARKER "$a"; then exec sleep 600; fi
  prev="$a"
done
mkdir -p "$out" && cp %q "$out/document.pdf"
`, c.Get("text.pdf").Path)
	if err := os.WriteFile(filepath.Join(bin, "soffice"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	fx := newFixture(t, nil, "LIBREOFFICE_TIMEOUT", "3", "CONVERT_CONCURRENCY", "1")
	dir := t.TempDir()
	hang := filepath.Join(dir, "hang.txt")
	os.WriteFile(hang, []byte("HANG-MARKER: this conversion never ends\n"), 0o644)
	start := time.Now()
	_, err := fx.run(docflow.StepConvertToPDF, fx.file(hang, "text/plain"), nil, nil)
	if docflow.ErrorCode(err) != docflow.ETIMEOUT {
		t.Fatalf("hanging conversion: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("hanging conversion took %s", d)
	}
	// With one converter slot, the next conversion only works if the hung
	// process gave its slot back.
	s := c.Get("letter.rtf")
	f := fx.file(s.Path, s.MimeType)
	fx.must(docflow.StepConvertToPDF, f)
	if info := fx.pdfInfo(f.ProcessedBlob); !strings.Contains(info, "Pages:") {
		t.Fatalf("converted: %s", info)
	}
}

// TestScannedAndBornDigital: OCR reads a scan through Tesseract (searchable
// PDF, quality from the text) and a text PDF from its layer (score 100).
func TestScannedAndBornDigital(t *testing.T) {
	corpus.RequireTools(t, "tesseract", "pdftotext", "pdftoppm", "pdfunite", "img2pdf")
	c := sharedCorpus(t)
	fx := newFixture(t, nil, "TESSERACT_LANGUAGE", "eng")

	s := c.Get("scan_clean.png")
	f := fx.file(s.Path, s.MimeType)
	fx.must(docflow.StepConvertToPDF, f)
	converted := f.ProcessedBlob
	res := fx.must(docflow.StepOCR, f)
	if cer := corpus.CER(s.Text, f.OCRText); cer > 0.05 {
		t.Fatalf("CER %.3f: %q", cer, f.OCRText)
	}
	if f.OCRQualityScore == nil || *f.OCRQualityScore < 50 || *f.OCRQualityScore >= 100 {
		t.Fatalf("quality %v", f.OCRQualityScore)
	}
	if f.ProcessedBlob == converted {
		t.Fatal("the processed version did not become searchable")
	}
	p, _ := fx.blobs.Path(t.Context(), f.ProcessedBlob)
	out, err := exec.Command("pdftotext", p, "-").Output()
	layer := string(out)
	if err != nil || corpus.CER(s.Text, layer) > 0.05 {
		t.Fatalf("searchable PDF text layer: %v %q", err, layer)
	}
	t.Log(res.Message)

	// The multi-page TIFF goes page by page through pdftoppm.
	s = c.Get("scan_multi.tiff")
	f = fx.file(s.Path, s.MimeType)
	fx.must(docflow.StepConvertToPDF, f)
	fx.must(docflow.StepOCR, f)
	if cer := corpus.CER(s.Text, f.OCRText); cer > 0.05 {
		t.Fatalf("TIFF CER %.3f: %q", cer, f.OCRText)
	}
	if info := fx.pdfInfo(f.ProcessedBlob); !strings.Contains(info, fmt.Sprintf("Pages:           %d", s.Pages)) {
		t.Fatalf("searchable TIFF: %s", info)
	}

	s = c.Get("text.pdf")
	f = fx.file(s.Path, s.MimeType)
	fx.must(docflow.StepConvertToPDF, f)
	res = fx.must(docflow.StepOCR, f)
	if f.OCRQualityScore == nil || *f.OCRQualityScore != 100 || corpus.CER(s.Text, f.OCRText) > 0.01 {
		t.Fatalf("born-digital: score %v, %s", f.OCRQualityScore, res.Message)
	}
	if f.ProcessedBlob != f.OriginalBlob {
		t.Fatal("a born-digital PDF was rewritten")
	}

	// A language without its pack fails with the package to install.
	_, err = fx.run(docflow.StepOCR, fx.file(c.Get("scan_noisy.png").Path, "image/png"), map[string]any{"ocr_language": "kor"}, nil)
	if err == nil || !strings.Contains(err.Error(), "tesseract-ocr-kor") {
		// The PNG has no PDF version: that error comes first unless
		// converted, so convert and retry.
		f := fx.file(c.Get("scan_noisy.png").Path, "image/png")
		fx.must(docflow.StepConvertToPDF, f)
		_, err = fx.run(docflow.StepOCR, f, map[string]any{"ocr_language": "kor"}, nil)
		if err == nil || !strings.Contains(err.Error(), "tesseract-ocr-kor") {
			t.Fatalf("missing language: %v", err)
		}
	}
}

func TestCloudOCR(t *testing.T) {
	corpus.RequireTools(t, "pdfinfo")
	c := sharedCorpus(t)
	fx := newFixture(t, nil)
	s := c.Get("invoice.pdf")
	f := fx.file(s.Path, s.MimeType)
	// Not configured: fails at once, naming the settings.
	_, err := fx.run(docflow.StepOCR, f, nil, map[string]any{"force_cloud_ocr": true})
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(err.Error(), "AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT") {
		t.Fatalf("unconfigured cloud OCR: %v", err)
	}
	// A server speaking Document Intelligence's analyze/poll protocol.
	azurePoll = 10 * time.Millisecond
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Ocp-Apim-Subscription-Key") != "k" {
			w.WriteHeader(401)
			return
		}
		switch {
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/documentModels/prebuilt-read:analyze"):
			b, _ := io.ReadAll(r.Body)
			if !strings.HasPrefix(string(b), "%PDF") || r.Header.Get("Content-Type") != "application/pdf" {
				w.WriteHeader(400)
				return
			}
			w.Header().Set("Operation-Location", "http://"+r.Host+"/op/1")
			w.WriteHeader(202)
		case r.Method == "GET" && r.URL.Path == "/op/1":
			if polls.Add(1) < 3 {
				json.NewEncoder(w).Encode(map[string]any{"status": "running"})
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"status": "succeeded", "analyzeResult": map[string]any{
				"content": "Rechnung Nr. 4711 from the cloud",
				"pages":   []any{map[string]any{"words": []any{map[string]any{"confidence": 0.99}, map[string]any{"confidence": 0.97}}}},
			}})
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	fx.settings.set("AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT", srv.URL)
	fx.settings.set("AZURE_DOCUMENT_INTELLIGENCE_KEY", "k")
	res, err := fx.run(docflow.StepOCR, f, map[string]any{"force_cloud_ocr": true}, nil)
	if err != nil || f.OCRText != "Rechnung Nr. 4711 from the cloud" || f.OCRQualityScore == nil {
		t.Fatalf("cloud OCR: %v %q", err, f.OCRText)
	}
	t.Log(res.Message)
	fx.settings.set("AZURE_DOCUMENT_INTELLIGENCE_KEY", "wrong")
	if _, err := fx.run(docflow.StepOCR, f, map[string]any{"force_cloud_ocr": "true"}, nil); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong key: %v", err)
	}
}

// TestMetadataClassifyEmbed runs the text steps on the generated invoice:
// rules extraction, classification with a user rule, PDF properties and
// the sidecar, the hashing embedding.
func TestMetadataClassifyEmbed(t *testing.T) {
	corpus.RequireTools(t, "pdfinfo", "pdftotext")
	c := sharedCorpus(t)
	owner := "alice"
	rules := staticRules{
		{ID: 1, OwnerID: &owner, Name: "vat", Category: "invoice", RuleType: docflow.RuleContentKeyword, Pattern: "IBAN", Enabled: true},
		{ID: 2, OwnerID: &owner, Name: "off", Category: "letter", RuleType: docflow.RuleContentKeyword, Pattern: "rechnung", Enabled: false},
	}
	fx := newFixture(t, rules)
	s := c.Get("invoice.pdf")
	f := fx.file(s.Path, s.MimeType)
	f.OwnerID = &owner
	for _, st := range []string{docflow.StepConvertToPDF, docflow.StepOCR, docflow.StepExtractMetadata, docflow.StepClassify} {
		fx.must(st, f)
	}
	if f.AIMetadata["provider"] != "rules" || f.DocumentTitle == nil || *f.DocumentTitle == "" {
		t.Fatalf("metadata %v title %v", f.AIMetadata, f.DocumentTitle)
	}
	cl, _ := f.AIMetadata["classification"].(map[string]any)
	if cl["category"] != "invoice" || cl["label"] != "Invoice" || cl["confidence"].(float64) < 70 {
		t.Fatalf("classification %v", cl)
	}
	if !strings.Contains(fmt.Sprint(cl["matched_rules"]), "vat") || strings.Contains(fmt.Sprint(cl["matched_rules"]), "off") {
		t.Fatalf("matched rules %v", cl["matched_rules"])
	}
	if f.AIMetadata["document_type"] == "" || f.AIMetadata["document_type"] == nil {
		t.Fatalf("document_type not filled: %v", f.AIMetadata)
	}
	// Without the built-in rules only the user's rule can match.
	g := *f
	g.AIMetadata = map[string]any{}
	g.OwnerID = nil
	if _, err := fx.run(docflow.StepClassify, &g, map[string]any{"use_builtin_rules": false}, nil); err != nil {
		t.Fatal(err)
	}
	if cl := g.AIMetadata["classification"].(map[string]any); cl["category"] != "unknown" || cl["confidence"] != 0.0 {
		t.Fatalf("no rules: %v", cl)
	}
	if _, ok := g.AIMetadata["document_type"]; ok {
		t.Fatalf("unknown filled document_type: %v", g.AIMetadata)
	}

	before := f.ProcessedBlob
	fx.must(docflow.StepEmbedMetadata, f)
	if f.ProcessedBlob == before {
		t.Fatal("properties did not produce a new processed version")
	}
	info := fx.pdfInfo(f.ProcessedBlob)
	props := f.AIMetadata["pdf_properties"].(map[string]any)
	if !strings.Contains(info, "Title:           "+props["title"].(string)) || !strings.Contains(info, "Subject:         Invoice") ||
		!strings.Contains(info, "Keywords:") || !strings.Contains(info, "invoice") {
		t.Fatalf("pdfinfo:\n%s\nprops %v", info, props)
	}
	side, _ := f.AIMetadata["metadata_sidecar"].(string)
	rc, _, err := fx.blobs.Open(t.Context(), side)
	if err != nil {
		t.Fatalf("sidecar %q: %v", side, err)
	}
	var sc map[string]any
	if err := json.NewDecoder(rc).Decode(&sc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if sc["extra"].(map[string]any)["processed_blob"] != f.ProcessedBlob || sc["classification"] == nil || sc["metadata"] == nil {
		t.Fatalf("sidecar %v", sc)
	}

	res := fx.must(docflow.StepComputeEmbedding, f)
	if len(res.Embedding) != 384 || res.EmbeddingModel == "" {
		t.Fatalf("embedding %d %q", len(res.Embedding), res.EmbeddingModel)
	}
	var norm float64
	for _, v := range res.Embedding {
		norm += float64(v) * float64(v)
	}
	if norm < 0.99 || norm > 1.01 {
		t.Fatalf("embedding not normalised: %f", norm)
	}
	fx.settings.set("EMBEDDING_DIMENSIONS", "64")
	if res := fx.must(docflow.StepComputeEmbedding, f); len(res.Embedding) != 64 {
		t.Fatalf("EMBEDDING_DIMENSIONS not read at run time: %d", len(res.Embedding))
	}
	// No text: skipped, not failed.
	empty := &docflow.File{OriginalFilename: "blank.png"}
	if res := fx.must(docflow.StepComputeEmbedding, empty); !res.Skipped {
		t.Fatal("embedding of an empty text was not skipped")
	}
}

// TestProviderFaults: a chat endpoint that answers prose and an embedding
// endpoint that answers the wrong dimension both fail their steps.
func TestProviderFaults(t *testing.T) {
	var chats, embeds atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/chat/completions":
			chats.Add(1)
			json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{
				"content": "Sure! This looks like an invoice from ACME, dated last week."}}}})
		case "/v1/embeddings":
			embeds.Add(1)
			json.NewEncoder(w).Encode(map[string]any{"data": []any{map[string]any{"embedding": make([]float32, 12), "index": 0}}})
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	fx := newFixture(t, nil, "METADATA_PROVIDER", "openai", "OPENAI_BASE_URL", srv.URL+"/v1", "OPENAI_MODEL", "m",
		"EMBEDDING_PROVIDER", "openai", "EMBEDDING_MODEL", "e", "EMBEDDING_DIMENSIONS", "16")
	f := &docflow.File{OriginalFilename: "x.pdf", OCRText: "Invoice 42 total 10 EUR", AIMetadata: map[string]any{}}
	_, err := fx.run(docflow.StepExtractMetadata, f, nil, nil)
	if err == nil || docflow.ErrorCode(err) == docflow.EINVALID || !strings.Contains(err.Error(), "JSON") {
		t.Fatalf("prose reply: want a retryable error about JSON, got %v", err)
	}
	if chats.Load() < 2 {
		t.Fatalf("prose was not retried: %d requests", chats.Load())
	}
	if len(f.AIMetadata) != 0 {
		t.Fatalf("failed extraction changed metadata: %v", f.AIMetadata)
	}
	_, err = fx.run(docflow.StepComputeEmbedding, f, nil, nil)
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(err.Error(), "12 dimensions") {
		t.Fatalf("wrong dimension: %v", err)
	}
	if embeds.Load() != 1 {
		t.Fatalf("a wrong dimension was retried: %d requests", embeds.Load())
	}
}
