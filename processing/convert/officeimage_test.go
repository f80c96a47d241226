package convert

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"docflow"
	"docflow/internal/corpus"
	"docflow/internal/proc"
)

// TestOfficeImagePixelCap: a 540 KB DOCX whose picture is a 15000²
// PNG (LibreOffice took 855 MB for it) is refused before LibreOffice
// starts, naming the picture; a DOCX with an ordinary picture converts.
func TestOfficeImagePixelCap(t *testing.T) {
	corpus.RequireTools(t, "soffice", "pdfinfo")
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.docx")
	if err := corpus.WriteDOCXWithImage(huge, "A picture follows.", corpus.BlankPNG(15000, 15000)); err != nil {
		t.Fatal(err)
	}
	conv := newConverter(t, Options{})
	const docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	before := proc.Stats()["soffice"].Runs
	err := conv.Convert(context.Background(), huge, docx, filepath.Join(dir, "huge.pdf"))
	msg := docflow.ErrorMessage(err)
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(msg, "word/media/image1.png") || !strings.Contains(msg, "15000×15000") {
		t.Fatalf("got %v", err)
	}
	t.Log(msg)
	if proc.Stats()["soffice"].Runs != before {
		t.Fatal("LibreOffice ran on the refused document")
	}

	ok := filepath.Join(dir, "ok.docx")
	if err := corpus.WriteDOCXWithImage(ok, "A picture follows.", corpus.BlankPNG(1200, 900)); err != nil {
		t.Fatal(err)
	}
	if err := conv.Convert(context.Background(), ok, docx, filepath.Join(dir, "ok.pdf")); err != nil {
		t.Fatal(err)
	}
	if text := pdfText(t, filepath.Join(dir, "ok.pdf")); !strings.Contains(text, "A picture follows.") {
		t.Fatalf("text %q", text)
	}
}
