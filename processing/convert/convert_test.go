package convert

import (
	"archive/zip"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"docflow"
	"docflow/internal/corpus"
)

// sharedCorpus is the test corpus of this binary, with small scanned pages
// so that OCR stays quick.
func sharedCorpus(t *testing.T) *corpus.Corpus {
	return corpus.Shared(t, corpus.Options{Seed: 3, ScanWidthMM: 105, ScanHeightMM: 74, ScanLines: 4})
}

func TestMain(m *testing.M) { os.Exit(corpus.RunTests(m)) }

func newConverter(t *testing.T, o Options) *Converter {
	t.Helper()
	if o.TempDir == "" {
		o.TempDir = t.TempDir()
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func pdfText(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("pdftotext", "-layout", path, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext %s: %v", path, err)
	}
	return string(out)
}

func TestConvertEveryType(t *testing.T) {
	corpus.RequireTools(t, "soffice", "img2pdf", "rsvg-convert", "pdfinfo", "pdftotext")
	c := sharedCorpus(t)
	conv := newConverter(t, Options{MaxConcurrent: 2})
	names := []string{"document.docx", "sheet.xlsx", "slides.pptx", "notes.txt", "table.csv", "letter.rtf",
		"text.pdf", "scan_clean.png", "scan_multi.tiff", "photo.gif", "photo.bmp", "photo.webp", "photo_rotated.jpg", "drawing.svg"}
	for _, name := range names {
		s := c.Get(name)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out.pdf")
			// Blobs have no extension: convert from an extension-less copy.
			in := filepath.Join(t.TempDir(), "blob")
			b, _ := os.ReadFile(s.Path)
			os.WriteFile(in, b, 0o644)
			if err := conv.Convert(context.Background(), in, s.MimeType, out); err != nil {
				t.Fatalf("convert: %v", err)
			}
			info, err := conv.CheckPDF(context.Background(), out)
			if err != nil {
				t.Fatalf("output: %v", err)
			}
			if s.Pages > 0 && info.Pages != s.Pages {
				t.Errorf("pages %d, want %d", info.Pages, s.Pages)
			}
			if s.Scanned {
				return // image pages have no text layer; OCR tests read them
			}
			got := pdfText(t, out)
			// Office layout re-wraps lines: compare word sets loosely.
			words := strings.Fields(s.Text)
			missing := 0
			for _, w := range words {
				if !strings.Contains(got, strings.Trim(w, ".,")) {
					missing++
				}
			}
			if missing*10 > len(words) {
				t.Errorf("%d of %d words missing from the PDF text:\n%s", missing, len(words), got)
			}
		})
	}
}

func TestImageTrueSizeAndEXIFRotation(t *testing.T) {
	corpus.RequireTools(t, "img2pdf", "pdfinfo", "pdftoppm", "tesseract")
	c := sharedCorpus(t)
	conv := newConverter(t, Options{})
	ctx := context.Background()

	// 300 dpi A7 landscape scan → 105 × 74 mm page (297.6 × 209.8 pt).
	out := filepath.Join(t.TempDir(), "scan.pdf")
	if err := conv.Convert(ctx, c.Get("scan_clean.png").Path, "image/png", out); err != nil {
		t.Fatal(err)
	}
	info, _ := exec.Command("pdfinfo", out).Output()
	if !strings.Contains(string(info), "297.6 x 209.76 pts") && !strings.Contains(string(info), "297.6 x 209.8 pts") {
		t.Errorf("page size not the true size of a 300 dpi 105x74 mm scan:\n%s", info)
	}

	// The JPEG is stored sideways; honouring EXIF orientation 6 makes the
	// rendered page landscape and readable.
	s := c.Get("photo_rotated.jpg")
	out = filepath.Join(t.TempDir(), "rot.pdf")
	if err := conv.Convert(ctx, s.Path, "image/jpeg", out); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(t.TempDir(), "page")
	if err := exec.Command("pdftoppm", "-r", "150", "-png", "-singlefile", out, png).Run(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(png + ".png")
	cfg, _, err := image.DecodeConfig(f)
	f.Close()
	if err != nil || cfg.Width <= cfg.Height {
		t.Fatalf("rendered page %dx%d (%v): EXIF rotation not applied", cfg.Width, cfg.Height, err)
	}
	text, err := exec.Command("tesseract", png+".png", "-", "--psm", "6").Output()
	if err != nil {
		t.Fatal(err)
	}
	if cer := corpus.CER(s.Text, string(text)); cer > 0.1 {
		t.Fatalf("rotated photo reads badly (CER %.2f): %q", cer, text)
	}
}

func TestHostileInput(t *testing.T) {
	corpus.RequireTools(t, "pdfinfo")
	c := sharedCorpus(t)
	conv := newConverter(t, Options{})
	cases := []struct {
		name, want string
	}{
		{"bomb.png", "decompression bomb"},
		{"zipbomb.docx", "ZIP bomb"},
		{"corrupt.pdf", "corrupt"},
		{"encrypted.pdf", "encrypted with a password"},
		{"zero_pages.pdf", "no pages"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := c.Get(tc.name)
			start := time.Now()
			err := conv.Convert(context.Background(), s.Path, s.MimeType, filepath.Join(t.TempDir(), "out.pdf"))
			if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(docflow.ErrorMessage(err), tc.want) {
				t.Fatalf("got %v, want EINVALID mentioning %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refusal took %s", d)
			}
		})
	}
}

// TestCheckPDFInProcess: a readable PDF is validated without running
// pdfinfo (a stand-in that records its calls stays unused), and a PDF the
// in-process check refuses still reaches poppler, which words the error.
func TestCheckPDFInProcess(t *testing.T) {
	c := sharedCorpus(t)
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$@\" >> " + calls + "\necho 'Syntax Error: Couldn'\\''t read xref table' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "pdfinfo"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for name, pages := range map[string]int{"text.pdf": 3, "invoice.pdf": 1} {
		info, err := CheckPDF(context.Background(), c.Get(name).Path, time.Minute)
		if err != nil || info.Pages != pages {
			t.Fatalf("%s: %+v, %v (want %d pages)", name, info, err, pages)
		}
	}
	if b, err := os.ReadFile(calls); err == nil {
		t.Fatalf("pdfinfo ran for readable PDFs: %s", b)
	}
	_, err := CheckPDF(context.Background(), c.Get("corrupt.pdf").Path, time.Minute)
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(docflow.ErrorMessage(err), "corrupt") {
		t.Fatalf("corrupt.pdf: %v", err)
	}
	if _, err := os.ReadFile(calls); err != nil {
		t.Fatal("pdfinfo was not asked about the PDF pdfcpu refused")
	}
}

func TestZipBombWithLyingHeader(t *testing.T) {
	// The entries claim 1 KiB each but inflate to 16 MiB: the streaming
	// check must stop what the declared sizes hide.
	dir := t.TempDir()
	honest := filepath.Join(dir, "honest.docx")
	if err := corpus.WriteZipBombDOCX(honest, 3, 16<<20); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(honest)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	lying := filepath.Join(dir, "lying.docx")
	f, _ := os.Create(lying)
	zw := zip.NewWriter(f)
	for _, e := range zr.File {
		raw, err := e.OpenRaw()
		if err != nil {
			t.Fatal(err)
		}
		h := e.FileHeader
		if h.UncompressedSize64 > 1024 {
			h.UncompressedSize64 = 1024
		}
		w, err := zw.CreateRaw(&h)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(w, raw)
	}
	zw.Close()
	f.Close()
	conv := newConverter(t, Options{MaxUncompressed: 8 << 20})
	if err := conv.checkZip(lying); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Fatalf("got %v", err)
	}
	if err := conv.checkZip(honest); docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(err.Error(), "ZIP bomb") {
		t.Fatalf("got %v", err)
	}
}

func TestPNGWithAlphaFallsBack(t *testing.T) {
	corpus.RequireTools(t, "img2pdf", "pdfinfo")
	img := image.NewNRGBA(image.Rect(0, 0, 200, 100))
	for i := range img.Pix {
		img.Pix[i] = byte(i)
	}
	img.Set(10, 10, color.NRGBA{0, 0, 0, 0})
	p := filepath.Join(t.TempDir(), "alpha.png")
	f, _ := os.Create(p)
	png.Encode(f, img)
	f.Close()
	conv := newConverter(t, Options{})
	out := filepath.Join(t.TempDir(), "out.pdf")
	if err := conv.Convert(context.Background(), p, "image/png", out); err != nil {
		t.Fatal(err)
	}
	if info, err := conv.CheckPDF(context.Background(), out); err != nil || info.Pages != 1 {
		t.Fatalf("%+v %v", info, err)
	}
}

func TestUnsupportedAndMissingTool(t *testing.T) {
	conv := newConverter(t, Options{LibreOffice: "/nonexistent/soffice"})
	dir := t.TempDir()
	bin := filepath.Join(dir, "blob")
	os.WriteFile(bin, []byte("\x7fELF\x02\x01\x01\x00garbage"), 0o644)
	err := conv.Convert(context.Background(), bin, "application/x-executable", filepath.Join(dir, "o.pdf"))
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(docflow.ErrorMessage(err), "supported types are") {
		t.Fatalf("unsupported: %v", err)
	}
	c := sharedCorpus(t)
	err = conv.Convert(context.Background(), c.Get("notes.txt").Path, "text/plain", filepath.Join(dir, "o.pdf"))
	if docflow.ErrorCode(err) != docflow.EUNAVAILABLE || !strings.Contains(docflow.ErrorMessage(err), "soffice not found") {
		t.Fatalf("missing libreoffice: %v", err)
	}
	t.Setenv("PATH", dir)
	err = conv.Convert(context.Background(), c.Get("photo.gif").Path, "image/gif", filepath.Join(dir, "o.pdf"))
	if docflow.ErrorCode(err) != docflow.EUNAVAILABLE || docflow.ErrorMessage(err) != "img2pdf not found on PATH: install img2pdf" {
		t.Fatalf("missing img2pdf: %v", err)
	}
}

// TestLibreOfficeHangIsKilled runs a fake soffice that hangs (with a child
// process, as soffice.bin is) on its first call and hands over to the real
// one afterwards: the first conversion must fail at its timeout with the
// whole process group gone, the next one must work.
func TestLibreOfficeHangIsKilled(t *testing.T) {
	corpus.RequireTools(t, "soffice", "pdfinfo")
	real, _ := exec.LookPath("soffice")
	dir := t.TempDir()
	marker := filepath.Join(dir, "hung-once")
	childPID := filepath.Join(dir, "child.pid")
	fake := filepath.Join(dir, "soffice")
	script := fmt.Sprintf(`#!/bin/sh
if [ ! -e %[1]q ]; then
  touch %[1]q
  sleep 300 &
  echo $! > %[2]q
  wait
  exit 0
fi
exec %[3]q "$@"
`, marker, childPID, real)
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	conv := newConverter(t, Options{LibreOffice: fake, OfficeTimeout: 2 * time.Second, MaxConcurrent: 1})
	c := sharedCorpus(t)
	s := c.Get("document.docx")

	start := time.Now()
	err := conv.Convert(context.Background(), s.Path, s.MimeType, filepath.Join(dir, "1.pdf"))
	if docflow.ErrorCode(err) != docflow.ETIMEOUT {
		t.Fatalf("want ETIMEOUT, got %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("kill took %s", d)
	}
	b, _ := os.ReadFile(childPID)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatal("fake soffice did not record its child")
	}
	deadline := time.Now().Add(time.Minute)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("child %d of the hung converter still runs", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The same converter (same profile slot) converts the next file. The
	// slot's profile was discarded with the killed instance, and building
	// a fresh one takes LibreOffice longer than the 2 s used to provoke the
	// hang, so the next conversion gets the production default.
	conv.opts.OfficeTimeout = DefaultOfficeTimeout
	out := filepath.Join(dir, "2.pdf")
	if err := conv.Convert(context.Background(), s.Path, s.MimeType, out); err != nil {
		t.Fatalf("conversion after the hang: %v", err)
	}
	if _, err := conv.CheckPDF(context.Background(), out); err != nil {
		t.Fatal(err)
	}
}

func TestCancelStopsConversion(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "soffice")
	os.WriteFile(fake, []byte("#!/bin/sh\nsleep 300\n"), 0o755)
	conv := newConverter(t, Options{LibreOffice: fake})
	c := sharedCorpus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := conv.Convert(ctx, c.Get("notes.txt").Path, "text/plain", filepath.Join(dir, "o.pdf"))
	// The converter would sleep five minutes: a minute bounds a
	// conversion that ignored the cancel, however slow the machine.
	if err == nil || time.Since(start) > time.Minute {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}

func TestResolveType(t *testing.T) {
	cases := []struct{ declared, sniffed, want string }{
		{"text/csv", "text/plain", "text/csv"},
		{"image/svg+xml", "text/plain", "image/svg+xml"},
		{"image/png", "image/jpeg", "image/jpeg"},
		{"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/zip", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
		{"application/pdf; charset=binary", "application/pdf", "application/pdf"},
	}
	for _, c := range cases {
		got, _, err := resolveType(c.declared, c.sniffed)
		if err != nil || got != c.want {
			t.Errorf("resolveType(%q, %q) = %q, %v; want %q", c.declared, c.sniffed, got, err, c.want)
		}
	}
	if _, _, err := resolveType("application/zip", "application/zip"); err == nil {
		t.Error("a plain zip must be unsupported")
	}
}

func FuzzImageHeaders(f *testing.F) {
	f.Add([]byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"), true)
	f.Add([]byte("II*\x00\x08\x00\x00\x00\x01\x00\x00\x01\x04\x00\x01\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00"), false)
	f.Fuzz(func(t *testing.T, b []byte, isGIF bool) {
		p := filepath.Join(t.TempDir(), "x")
		os.WriteFile(p, b, 0o644)
		c := &Converter{opts: Options{MaxPixels: DefaultMaxPixels, MaxFrames: 10}}
		mt := "image/tiff"
		if isGIF {
			mt = "image/gif"
		}
		_ = c.checkImage(p, mt) // must not panic or hang
	})
}
