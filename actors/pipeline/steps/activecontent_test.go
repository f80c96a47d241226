package steps

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"docflow"
	"docflow/internal/corpus"
	"docflow/processing/pdfsafe"
)

// TestProcessedPDFHasNoActiveContent: the processed version of a
// born-digital PDF that runs JavaScript when opened (and launches a
// program from a link) carries none of it, whichever step made it;
// the original is kept as uploaded.
func TestProcessedPDFHasNoActiveContent(t *testing.T) {
	corpus.RequireTools(t, "pdfinfo", "pdftotext", "pdftoppm", "pdfseparate", "pdfunite", "tesseract", "img2pdf")
	dir := t.TempDir()
	lines := []string{"Invoice 2024-17 from ACME GmbH", "Total amount due: 120.00 EUR"}
	active := filepath.Join(dir, "active.pdf")
	if err := os.WriteFile(active, corpus.ActiveContentPDF(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t, nil, "TESSERACT_LANGUAGE", "eng")
	clean := func(what, key string) {
		t.Helper()
		if info := fx.pdfInfo(key); !strings.Contains(info, "JavaScript:      no") {
			t.Fatalf("%s: poppler finds JavaScript:\n%s", what, info)
		}
		p, _ := fx.blobs.Path(t.Context(), key)
		b, _ := os.ReadFile(p)
		if found, err := pdfsafe.Inspect(bytes.NewReader(b)); err != nil || len(found) > 0 {
			t.Fatalf("%s: active content left: %v, %v", what, found, err)
		}
		if text, _ := exec.Command("pdftotext", p, "-").Output(); !strings.Contains(string(text), lines[1]) {
			t.Fatalf("%s: text lost: %q", what, text)
		}
	}

	// convert_to_pdf: a PDF with active content is not passed through.
	f := fx.file(active, "application/pdf")
	res := fx.must(docflow.StepConvertToPDF, f)
	if f.ProcessedBlob == "" || f.ProcessedBlob == f.OriginalBlob || !strings.Contains(res.Message, "active content removed") {
		t.Fatalf("convert: %q, processed %q", res.Message, f.ProcessedBlob)
	}
	t.Log(res.Message)
	clean("convert_to_pdf", f.ProcessedBlob)
	if info := fx.pdfInfo(f.OriginalBlob); !strings.Contains(info, "JavaScript:      yes") {
		t.Fatal("the original was changed")
	}
	fx.must(docflow.StepEmbedMetadata, f)
	clean("embed_metadata after convert", f.ProcessedBlob)

	// embed_metadata alone writes the processed version from the original.
	f = fx.file(active, "application/pdf")
	fx.must(docflow.StepEmbedMetadata, f)
	clean("embed_metadata", f.ProcessedBlob)

	// ocr alone on a document with a scanned page: the searchable PDF
	// keeps the text page as it was, without its actions.
	s := sharedCorpus(t).Get("scan_clean.png")
	sf := fx.file(s.Path, s.MimeType)
	fx.must(docflow.StepConvertToPDF, sf)
	scan, _ := fx.blobs.Path(t.Context(), sf.ProcessedBlob)
	mixed := filepath.Join(dir, "mixed.pdf")
	if out, err := exec.Command("pdfunite", active, scan, mixed).CombinedOutput(); err != nil {
		t.Fatalf("pdfunite: %v: %s", err, out)
	}
	f = fx.file(mixed, "application/pdf")
	fx.must(docflow.StepOCR, f)
	if f.ProcessedBlob == "" {
		t.Fatal("no searchable version")
	}
	clean("ocr", f.ProcessedBlob)
}
