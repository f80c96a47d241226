package ocr

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"docflow"
	"docflow/internal/corpus"
	"docflow/internal/proc"
)

// TestPageRasterCap: a page whose raster would pass MaxPagePixels is read
// at the resolution that fits; one that would pass it even at MinDPI fails
// the document with a message naming the page, before any rendering. The
// 436-byte PDF with one 4800 × 4800 pt page made pdftoppm take 777 MB and
// Tesseract 2 GB at 300 dpi.
func TestPageRasterCap(t *testing.T) {
	corpus.RequireTools(t, "pdftotext", "pdftoppm", "pdfinfo", "tesseract", "img2pdf")
	ctx := context.Background()

	huge := filepath.Join(t.TempDir(), "huge.pdf")
	if err := corpus.WriteHugePagePDF(huge, 4800, 4800); err != nil {
		t.Fatal(err)
	}
	before := proc.Stats()
	_, err := New(Options{TempDir: t.TempDir()}).Process(ctx, huge, Request{Language: "eng"})
	msg := docflow.ErrorMessage(err)
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(msg, "page 1") || !strings.Contains(msg, "pixels") {
		t.Fatalf("huge page: %v", err)
	}
	t.Log(msg)
	after := proc.Stats()
	if after["pdftoppm"].Runs != before["pdftoppm"].Runs {
		t.Fatal("the huge page was rendered before it was refused")
	}

	// A scan of 1748 × 1240 pixels (148 × 105 mm at 300 dpi) under a cap
	// of 1 Mi pixels: its image is not read as it is but rasterised at
	// about 200 dpi, and still read well.
	s := sharedCorpus(t).Get("scan_clean.png")
	pdf := toPDF(t, s)
	out := filepath.Join(t.TempDir(), "searchable.pdf")
	res, err := New(Options{TempDir: t.TempDir(), MaxPagePixels: 1 << 20}).Process(ctx, pdf, Request{Language: "eng", Searchable: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExtractedPages != 0 || res.OCRPages != 1 {
		t.Fatalf("result %+v", res)
	}
	if cer := corpus.CER(s.Text, res.Text); cer > 0.05 {
		t.Fatalf("CER %.3f at the lowered resolution: %q", cer, res.Text)
	}
	// The searchable page keeps the page's size in points.
	if info := pdfInfo(t, out); !strings.Contains(info, "Page size:       419") {
		t.Fatalf("searchable pdf:\n%s", info)
	}

	// Under 256 Ki pixels even 150 dpi does not fit.
	_, err = New(Options{TempDir: t.TempDir(), MaxPagePixels: 1 << 18}).Process(ctx, pdf, Request{Language: "eng"})
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(docflow.ErrorMessage(err), "150 dpi") {
		t.Fatalf("small cap: %v", err)
	}
}

// TestRasterDPI: the resolution a page is rendered at.
func TestRasterDPI(t *testing.T) {
	e := New(Options{})
	for _, c := range []struct {
		w, h float64
		dpi  int
		ok   bool
	}{
		{595, 842, 300, true},   // A4 at the default
		{2384, 3370, 208, true}, // A0: lowered to fit 64 Mi pixels
		{4800, 4800, 0, false},  // 10000² pixels even at 150 dpi
		{14400, 10, 300, true},  // a long strip is small in pixels
		{0, 842, 0, false},      // no size
	} {
		dpi, err := e.rasterDPI(1, [2]float64{c.w, c.h})
		if (err == nil) != c.ok || dpi != c.dpi {
			t.Errorf("%v×%v pt: %d dpi, %v", c.w, c.h, dpi, err)
		}
		if err == nil {
			if px := float64(int64(c.w*float64(dpi)/72+1) * int64(c.h*float64(dpi)/72+1)); px > DefaultMaxPagePixels {
				t.Errorf("%v×%v pt at %d dpi: %.0f pixels", c.w, c.h, dpi, px)
			}
		}
	}
}

func pdfInfo(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("pdfinfo", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
