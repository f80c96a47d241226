package corpus

import (
	"archive/zip"
	"bytes"
	"image"
	_ "image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"
)

func TestCER(t *testing.T) {
	if CER("hello world", "hello  world\n") != 0 {
		t.Fatal("whitespace should not count")
	}
	if got := CER("abcd", "abxd"); got != 0.25 {
		t.Fatalf("CER = %v", got)
	}
	if CER("", "") != 0 || CER("", "x") != 1 {
		t.Fatal("empty cases")
	}
}

func TestLinesDeterministic(t *testing.T) {
	a, b := Lines(7, 20, 50), Lines(7, 20, 50)
	if strings.Join(a, "\n") != strings.Join(b, "\n") || len(a) != 20 {
		t.Fatal("not deterministic")
	}
	for _, l := range a {
		if len(l) > 50 {
			t.Fatalf("line too long: %q", l)
		}
	}
	if strings.Join(Lines(8, 20, 50), "") == strings.Join(a, "") {
		t.Fatal("seed ignored")
	}
}

func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	c, err := Generate(dir, Options{Seed: 1, ScanWidthMM: 60, ScanHeightMM: 40, ScanLines: 2})
	if err != nil {
		t.Fatal(err)
	}
	// PNG: 300 dpi A7 landscape, decodable, with pHYs.
	b, _ := os.ReadFile(c.Get("scan_clean.png").Path)
	if !bytes.Contains(b[:64], []byte("pHYs")) {
		t.Fatal("no pHYs chunk")
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil || img.Bounds().Dx() != 708 {
		t.Fatalf("png: %v %v", err, img.Bounds())
	}
	// WebP decodes to the same black/white picture.
	f, _ := os.Open(c.Get("photo.webp").Path)
	w, err := webp.Decode(f)
	f.Close()
	if err != nil {
		t.Fatalf("webp: %v", err)
	}
	if w.Bounds().Dx() != 708 {
		t.Fatalf("webp size %v", w.Bounds())
	}
	// TIFF: the first page decodes; the file holds two IFDs.
	tb, _ := os.ReadFile(c.Get("scan_multi.tiff").Path)
	if _, err := tiff.Decode(bytes.NewReader(tb)); err != nil {
		t.Fatalf("tiff: %v", err)
	}
	// JPEG is stored sideways (taller than wide).
	f, _ = os.Open(c.Get("photo_rotated.jpg").Path)
	cfg, _, err := image.DecodeConfig(f)
	f.Close()
	if err != nil || cfg.Height <= cfg.Width {
		t.Fatalf("jpeg %v %+v", err, cfg)
	}
	// Bomb: the header says 10 gigapixels, the file is tiny.
	f, _ = os.Open(c.Get("bomb.png").Path)
	cfg, _, err = image.DecodeConfig(f)
	f.Close()
	if st, _ := os.Stat(c.Get("bomb.png").Path); err != nil || cfg.Width != 100000 || st.Size() > 1<<20 {
		t.Fatalf("bomb: %v %+v", err, cfg)
	}
	// Zip bomb: 2 GiB declared.
	zr, err := zip.OpenReader(c.Get("zipbomb.docx").Path)
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, f := range zr.File {
		total += f.UncompressedSize64
	}
	zr.Close()
	if total < 2000<<20 {
		t.Fatalf("zip bomb declares %d", total)
	}
	// DOCX is a readable zip with the document part.
	zr, err = zip.OpenReader(c.Get("document.docx").Path)
	if err != nil || len(zr.File) != 3 {
		t.Fatalf("docx: %v", err)
	}
	zr.Close()
	// The text PDF reads back as its ground truth.
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Skip("pdftotext not installed: install poppler-utils")
	}
	out, err := exec.Command("pdftotext", "-layout", c.Get("text.pdf").Path, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	if cer := CER(c.Get("text.pdf").Text, string(out)); cer > 0 {
		t.Fatalf("text pdf CER %.4f", cer)
	}
	for _, name := range []string{"corrupt.pdf", "encrypted.pdf"} {
		if err := exec.Command("pdftotext", c.Get(name).Path, "-").Run(); err == nil {
			t.Errorf("%s opened without error", name)
		}
	}
}

// TestPaddedTextPDF: the padded PDF has the size asked for, its text is
// extracted as written (no repair of the cross-reference table needed),
// and a line patched in place with text of the same length stays valid.
func TestPaddedTextPDF(t *testing.T) {
	b := PaddedTextPDF([][]string{{"Padded document", "Reference LOAD-00000000"}}, 100<<10)
	if len(b) < 100<<10 || len(b) > 100<<10+256 {
		t.Fatalf("size %d, want about %d", len(b), 100<<10)
	}
	i := bytes.Index(b, []byte("LOAD-00000000"))
	if i < 0 || bytes.Count(b, []byte("LOAD-00000000")) != 1 {
		t.Fatal("the reference line is not in the file once")
	}
	copy(b[i:], "LOAD-00001234")
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Skip("pdftotext not installed: install poppler-utils")
	}
	path := t.TempDir() + "/padded.pdf"
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("pdftotext", path, "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("pdftotext: %v: %s", err, stderr.String())
	}
	if !strings.Contains(string(out), "Reference LOAD-00001234") {
		t.Fatalf("text %q", out)
	}
}
