package steps

import (
	"path/filepath"
	"strings"
	"testing"

	"docflow"
	"docflow/internal/corpus"
	"docflow/internal/proc"
)

// TestToolMemoryBound: three files inside every size limit that drove the
// tools to gigabytes each fail with a message that says why, and no tool
// run of the test goes past TOOL_MEMORY_LIMIT:
//   - a 434-byte PDF with one blank 4800 × 4800 pt page (pdftoppm 777 MB
//     and Tesseract 2 GB at 300 dpi),
//   - a 440 KB 13000² PNG, under the image pixel limit (Tesseract 2.5 GB),
//   - a 540 KB DOCX showing a 15000² PNG (LibreOffice 855 MB).
func TestToolMemoryBound(t *testing.T) {
	corpus.RequireTools(t, "prlimit", "pdfinfo", "pdftotext", "pdftoppm", "tesseract", "soffice")
	dir := t.TempDir()
	hugePage := filepath.Join(dir, "poster.pdf")
	bigPNG := filepath.Join(dir, "big.png")
	docx := filepath.Join(dir, "picture.docx")
	if err := corpus.WriteHugePagePDF(hugePage, 4800, 4800); err != nil {
		t.Fatal(err)
	}
	if err := corpus.WriteBlankPNG(bigPNG, 13000, 13000); err != nil {
		t.Fatal(err)
	}
	if err := corpus.WriteDOCXWithImage(docx, "A picture follows.", corpus.BlankPNG(15000, 15000)); err != nil {
		t.Fatal(err)
	}

	const limit = 1 << 30
	fx := newFixture(t, nil, "TESSERACT_LANGUAGE", "eng")
	for _, c := range []struct {
		path, mime, failsAt, want string
	}{
		{hugePage, "application/pdf", docflow.StepOCR, "page 1 is too large to read"},
		{bigPNG, "image/png", docflow.StepOCR, "page 1 is too large to read"},
		{docx, "application/vnd.openxmlformats-officedocument.wordprocessingml.document", docflow.StepConvertToPDF, "15000×15000"},
	} {
		f := fx.file(c.path, c.mime)
		var err error
		for _, step := range []string{docflow.StepConvertToPDF, docflow.StepOCR} {
			if _, err = fx.run(step, f, nil, nil); err != nil {
				if step != c.failsAt {
					t.Fatalf("%s: %s failed: %v", filepath.Base(c.path), step, err)
				}
				break
			}
		}
		if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(docflow.ErrorMessage(err), c.want) {
			t.Fatalf("%s: want EINVALID at %s saying %q, got %v", filepath.Base(c.path), c.failsAt, c.want, err)
		}
		t.Logf("%s: %s", filepath.Base(c.path), docflow.ErrorMessage(err))
	}
	if got := proc.MemoryLimit(); got != limit {
		t.Fatalf("tools ran under %d bytes, want TOOL_MEMORY_LIMIT's default %d", got, limit)
	}
	for tool, u := range proc.Stats() {
		if u.MaxRSS > limit {
			t.Errorf("%s peaked at %d bytes", tool, u.MaxRSS)
		}
	}

	// The setting applies to the next run.
	fx.settings.set("TOOL_MEMORY_LIMIT", "805306368")
	s := sharedCorpus(t).Get("invoice.pdf")
	fx.must(docflow.StepOCR, fx.file(s.Path, s.MimeType))
	if got := proc.MemoryLimit(); got != 768<<20 {
		t.Fatalf("limit after the change: %d", got)
	}
	proc.SetMemoryLimit(proc.DefaultMemoryLimit)
}
