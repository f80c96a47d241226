package ocr

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"docflow/internal/corpus"
	"docflow/processing/convert"
)

// testPDF writes small PDFs object by object, for pages that no tool
// makes on demand (a rotated page, two images, a mask, CCITT data …).
type testPDF struct {
	objs [][]byte
}

// add appends an object and returns its number.
func (p *testPDF) add(body string) int {
	p.objs = append(p.objs, []byte(body))
	return len(p.objs)
}

// stream appends a stream object with its /Length.
func (p *testPDF) stream(dict string, data []byte) int {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<< %s /Length %d >>\nstream\n", dict, len(data))
	b.Write(data)
	b.WriteString("\nendstream")
	p.objs = append(p.objs, b.Bytes())
	return len(p.objs)
}

// pageSpec is one page of a testPDF: its content and its image XObjects
// by name (object numbers from stream).
type pageSpec struct {
	mediaBox string // default "0 0 W H" of the first image at 300 dpi
	extra    string // more page dictionary entries
	content  string
	images   map[string]int
}

// write lays out the pages (page tree in object 1) and writes the file.
func (p *testPDF) write(t testing.TB, path string, pages []pageSpec) {
	t.Helper()
	pagesObj := p.add("") // filled below
	var kids []string
	for _, pg := range pages {
		content := p.stream("", []byte(pg.content))
		var xo []string
		for name, n := range pg.images {
			xo = append(xo, fmt.Sprintf("/%s %d 0 R", name, n))
		}
		kids = append(kids, fmt.Sprintf("%d 0 R", p.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [%s] /Resources << /XObject << %s >> >> /Contents %d 0 R %s >>",
			pagesObj, pg.mediaBox, strings.Join(xo, " "), content, pg.extra))))
	}
	p.objs[pagesObj-1] = []byte(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(kids)))
	catalog := p.add(fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pagesObj))
	var b bytes.Buffer
	b.WriteString("%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(p.objs))
	for i, o := range p.objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(p.objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(p.objs)+1, catalog, xref)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pngParts encodes img with image/png and returns its IHDR fields, PLTE
// and the concatenated IDAT data (a zlib stream of PNG-filtered rows).
func pngParts(t testing.TB, img image.Image) (depth, colorType int, plte, idat []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	d := b.Bytes()[8:]
	for len(d) >= 12 {
		n := int(binary.BigEndian.Uint32(d))
		typ, data := string(d[4:8]), d[8:8+n]
		switch typ {
		case "IHDR":
			depth, colorType = int(data[8]), int(data[9])
		case "PLTE":
			plte = data
		case "IDAT":
			idat = append(idat, data...)
		}
		d = d[12+n:]
	}
	return depth, colorType, plte, idat
}

// flateImage adds img as a FlateDecode image with PNG predictors, the way
// processing/convert and img2pdf store PNG data, plus extra entries; the
// colour space comes from the PNG unless cs is given.
func (p *testPDF) flateImage(t testing.TB, img image.Image, cs, extra string) int {
	t.Helper()
	depth, ct, plte, idat := pngParts(t, img)
	colors := map[int]int{0: 1, 2: 3, 3: 1}[ct]
	if cs == "" {
		cs = map[int]string{0: "/DeviceGray", 2: "/DeviceRGB"}[ct]
		if ct == 3 {
			cs = fmt.Sprintf("[/Indexed /DeviceRGB %d <%s>]", len(plte)/3-1, hex.EncodeToString(plte))
		}
	}
	b := img.Bounds()
	return p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace %s /BitsPerComponent %d /Filter /FlateDecode /DecodeParms << /Predictor 15 /Colors %d /BitsPerComponent %d /Columns %d >> %s",
		b.Dx(), b.Dy(), cs, depth, colors, depth, b.Dx(), extra), idat)
}

// place is the content stream drawing one image over a w×h pt page.
func place(w, h float64, name string) string {
	return fmt.Sprintf("q\n%.4f 0 0 %.4f 0 0 cm\n/%s Do\nQ\n", w, h, name)
}

// pts is an image size in points at 300 dpi.
func pts(px int) float64 { return float64(px) * 72 / 300 }

// scanImage decodes a corpus scan (an 8-bit grey PNG).
func scanImage(t *testing.T, s *corpus.Sample) *image.Gray {
	t.Helper()
	f, err := os.Open(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := img.(*image.Gray)
	if !ok {
		t.Fatalf("scan is %T", img)
	}
	return g
}

// pageSizes returns the page sizes of a PDF in points.
func pageSizes(t *testing.T, pdf string) [][2]float64 {
	t.Helper()
	m, err := readPDFModel(context.Background(), pdf)
	if err != nil {
		t.Fatal(err)
	}
	dims, err := m.PageDims()
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]float64
	for _, d := range dims {
		out = append(out, [2]float64{d.Width, d.Height})
	}
	return out
}

// checkSameSizes fails unless the searchable PDF's pages have the input's
// page sizes within a point.
func checkSameSizes(t *testing.T, in, out string) {
	t.Helper()
	a, b := pageSizes(t, in), pageSizes(t, out)
	if len(a) != len(b) {
		t.Fatalf("pages: %d in, %d out", len(a), len(b))
	}
	for i := range a {
		if math.Abs(a[i][0]-b[i][0]) > 1 || math.Abs(a[i][1]-b[i][1]) > 1 {
			t.Errorf("page %d: %.2f×%.2f pt in, %.2f×%.2f pt in the searchable PDF", i+1, a[i][0], a[i][1], b[i][0], b[i][1])
		}
	}
}

// TestPNGScanReadFromImage: PNG scans (and a multi-page TIFF) converted by
// processing/convert are read from their image data within the accuracy
// targets, as well as or better than from a rasterisation (which is
// checked too), and the searchable PDF keeps the page sizes and reads
// back as the text.
func TestPNGScanReadFromImage(t *testing.T) {
	corpus.RequireTools(t, "pdftotext", "pdftoppm", "tesseract", "pdfunite", "img2pdf")
	c := sharedCorpus(t)
	for _, tc := range []struct {
		name   string
		maxCER float64
	}{{"scan_clean.png", 0.02}, {"scan_noisy.png", 0.05}, {"scan_multi.tiff", 0.02}} {
		t.Run(tc.name, func(t *testing.T) {
			s := c.Get(tc.name)
			pdf := toPDF(t, s)
			out := filepath.Join(t.TempDir(), "searchable.pdf")
			res, err := New(Options{Parallelism: 2, TempDir: t.TempDir()}).Process(context.Background(), pdf, Request{Language: "eng", Searchable: out})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExtractedPages != s.Pages || res.OCRPages != s.Pages {
				t.Fatalf("extracted %d of %d OCR pages, want %d", res.ExtractedPages, res.OCRPages, s.Pages)
			}
			if res.BornDigital || res.Pages != s.Pages || res.Engine != "tesseract" || res.Language != "eng" || !res.Searchable {
				t.Errorf("result %+v", res)
			}
			raster := New(Options{Parallelism: 2, TempDir: t.TempDir()})
			raster.noExtract = true
			rres, err := raster.Process(context.Background(), pdf, Request{Language: "eng"})
			if err != nil {
				t.Fatal(err)
			}
			if rres.ExtractedPages != 0 {
				t.Fatalf("raster engine extracted %d pages", rres.ExtractedPages)
			}
			cer, rcer := corpus.CER(s.Text, res.Text), corpus.CER(s.Text, rres.Text)
			t.Logf("%s: CER %.4f from the image, %.4f rasterised; confidence %.1f / %.1f", tc.name, cer, rcer, res.MeanConfidence, rres.MeanConfidence)
			if cer > tc.maxCER || cer > rcer+0.01 {
				t.Errorf("CER %.4f from the image, %.4f rasterised\n%q", cer, rcer, res.Text)
			}
			if res.MeanConfidence < 70 || res.Quality < 80 {
				t.Errorf("confidence %.1f quality %.1f", res.MeanConfidence, res.Quality)
			}
			checkSameSizes(t, pdf, out)
			if cer := corpus.CER(s.Text, pdfText(t, out)); cer > tc.maxCER+0.02 {
				t.Errorf("searchable PDF text layer CER %.4f", cer)
			}
		})
	}
}

// TestJPEGScanReadFromImage: JPEG scans (grey and RGB) wrapped by img2pdf
// are read from their JPEG data, which is copied out byte for byte, and
// the searchable PDF keeps the page sizes.
func TestJPEGScanReadFromImage(t *testing.T) {
	corpus.RequireTools(t, "pdftotext", "tesseract", "pdfunite", "img2pdf")
	s := sharedCorpus(t).Get("scan_clean.png")
	gray := scanImage(t, s)
	rgb := image.NewRGBA(gray.Bounds())
	draw.Draw(rgb, rgb.Bounds(), gray, image.Point{}, draw.Src)
	dir := t.TempDir()
	var jpgs []string
	for i, img := range []image.Image{gray, rgb} {
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("scan%d.jpg", i))
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		jpgs = append(jpgs, p)
	}
	pdf := filepath.Join(dir, "jpeg.pdf")
	if out, err := exec.Command("img2pdf", append([]string{"--imgsize", "300dpix300dpi", "-o", pdf}, jpgs...)...).CombinedOutput(); err != nil {
		t.Fatalf("img2pdf: %v %s", err, out)
	}

	imgs := New(Options{}).pageImages(context.Background(), pdf, 2, []int{1, 2})
	for i, p := range jpgs {
		img := imgs[i+1]
		if img == nil || img.ext != ".jpg" || img.dpi != 300 {
			t.Fatalf("page %d: %+v", i+1, img)
		}
		got := filepath.Join(dir, fmt.Sprintf("out%d.jpg", i))
		if err := img.write(pdf, got); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(p)
		b, _ := os.ReadFile(got)
		if !bytes.Equal(a, b) {
			t.Errorf("page %d: extracted JPEG differs from the source (%d vs %d bytes)", i+1, len(b), len(a))
		}
	}

	out := filepath.Join(dir, "searchable.pdf")
	res, err := New(Options{Parallelism: 2, TempDir: t.TempDir()}).Process(context.Background(), pdf, Request{Language: "eng", Searchable: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExtractedPages != 2 || res.OCRPages != 2 {
		t.Fatalf("result %+v", res)
	}
	for i, page := range strings.Split(res.Text, "\f") {
		if cer := corpus.CER(s.Text, page); cer > 0.02 {
			t.Errorf("page %d: CER %.4f: %q", i+1, cer, page)
		}
	}
	checkSameSizes(t, pdf, out)
}

// TestPageImageFallbacks: every page that is not one plain image covering
// it is left to the rasteriser, with the reason; a document mixing them
// reads every page, only the plain one from its image.
func TestPageImageFallbacks(t *testing.T) {
	corpus.RequireTools(t, "pdftotext", "pdftoppm", "tesseract", "pdfunite")
	c := sharedCorpus(t)
	s := c.Get("scan_clean.png")
	gray := scanImage(t, s)
	b := gray.Bounds()
	w, h := pts(b.Dx()), pts(b.Dy())
	box := fmt.Sprintf("0 0 %.4f %.4f", w, h)
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, gray, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}

	p := &testPDF{}
	plain := p.flateImage(t, gray, "", "")
	half := p.flateImage(t, gray.SubImage(image.Rect(0, 0, b.Dx()/2, b.Dy())), "", "")
	opaque := image.NewGray(image.Rect(0, 0, 8, 8))
	draw.Draw(opaque, opaque.Bounds(), image.White, image.Point{}, draw.Src)
	smask := p.flateImage(t, gray, "", fmt.Sprintf("/SMask %d 0 R", p.flateImage(t, opaque, "", "")))
	decode := p.flateImage(t, gray, "", "/Decode [1 0]")
	masked := p.flateImage(t, gray, "", "/Mask [0 10]")
	_, _, _, idat := pngParts(t, gray)
	noPredictor := p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode", b.Dx(), b.Dy()), idat)
	badColumns := p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /DecodeParms << /Predictor 15 /Columns %d >>", b.Dx(), b.Dy(), b.Dx()-1), idat)
	chain := p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter [/ASCIIHexDecode /FlateDecode]", b.Dx(), b.Dy()), []byte(hex.EncodeToString(idat)+">"))
	ccitt := p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /CCITTFaxDecode /DecodeParms << /K -1 /Columns %d /Rows %d >>", b.Dx(), b.Dy(), b.Dx(), b.Dy()), []byte{0, 1})
	jbig2 := p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /JBIG2Decode", b.Dx(), b.Dy()), []byte{0, 1})
	cmyk := p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceCMYK /BitsPerComponent 8 /Filter /DCTDecode", b.Dx(), b.Dy()), jpg.Bytes())
	wrongJPEG := p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode", b.Dx(), b.Dy()), jpg.Bytes())
	goodJPEG := p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode", b.Dx(), b.Dy()), jpg.Bytes())
	img := map[string]int{"Im0": plain}
	const k = 300 / 75.4

	cases := []struct {
		name string
		page pageSpec
		why  string // "" when the page is read from its image
	}{
		{"plain", pageSpec{content: place(w, h, "Im0"), images: img}, ""},
		{"plain JPEG", pageSpec{content: place(w, h, "Im0"), images: map[string]int{"Im0": goodJPEG}}, ""},
		{"bare placement", pageSpec{content: fmt.Sprintf("%.4f 0 0 %.4f 0 0 cm /Im0 Do", w, h), images: img}, ""},
		{"rotated", pageSpec{content: place(w, h, "Im0"), images: img, extra: "/Rotate 90"}, "rotated"},
		{"two images", pageSpec{content: place(w, h, "Im0") + place(w/2, h, "Im1"), images: map[string]int{"Im0": plain, "Im1": half}}, "not a single image placement"},
		{"flipped", pageSpec{content: fmt.Sprintf("q %.4f 0 0 %.4f 0 %.4f cm /Im0 Do Q", w, -h, h), images: img}, "turned or flipped"},
		{"turned", pageSpec{content: fmt.Sprintf("q 0 %.4f %.4f 0 0 0 cm /Im0 Do Q", h, -w), images: img}, "turned or flipped"},
		{"half the page", pageSpec{content: place(w/2, h, "Im0"), images: map[string]int{"Im0": half}}, "does not cover"},
		{"with text", pageSpec{content: place(w, h, "Im0") + "BT /F1 12 Tf 10 10 Td (x) Tj ET\n", images: img}, "not a single image placement"},
		{"cropped", pageSpec{content: place(w, h, "Im0"), images: img, extra: fmt.Sprintf("/CropBox [0 0 %.4f %.4f]", w/2, h)}, "cropped"},
		{"annotated", pageSpec{content: place(w, h, "Im0"), images: img, extra: "/Annots [<< /Type /Annot /Subtype /Text /Rect [0 0 10 10] >>]"}, "annotations"},
		{"soft mask", pageSpec{content: place(w, h, "Im0"), images: map[string]int{"Im0": smask}}, "/SMask"},
		{"decode array", pageSpec{content: place(w, h, "Im0"), images: map[string]int{"Im0": decode}}, "/Decode"},
		{"colour key mask", pageSpec{content: place(w, h, "Im0"), images: map[string]int{"Im0": masked}}, "/Mask"},
		{"flate without predictor", pageSpec{content: place(w, h, "Im0"), images: map[string]int{"Im0": noPredictor}}, "without a PNG predictor"},
		{"predictor columns", pageSpec{content: place(w, h, "Im0"), images: map[string]int{"Im0": badColumns}}, "/Columns"},
		{"filter chain", pageSpec{content: place(w, h, "Im0"), images: map[string]int{"Im0": chain}}, "chain of 2 filters"},
		{"CCITT", pageSpec{content: place(w, h, "Im0"), images: map[string]int{"Im0": ccitt}}, "/CCITTFaxDecode"},
		{"JBIG2", pageSpec{content: place(w, h, "Im0"), images: map[string]int{"Im0": jbig2}}, "/JBIG2Decode"},
		{"CMYK JPEG", pageSpec{content: place(w, h, "Im0"), images: map[string]int{"Im0": cmyk}}, "/DeviceCMYK"},
		{"JPEG not as declared", pageSpec{content: place(w, h, "Im0"), images: map[string]int{"Im0": wrongJPEG}}, "JPEG frame does not match"},
		{"low resolution", pageSpec{mediaBox: fmt.Sprintf("0 0 %.4f %.4f", w*5, h*5), content: place(w*5, h*5, "Im0"), images: img}, "out of range"},
		{"stretched", pageSpec{mediaBox: fmt.Sprintf("0 0 %.4f %.4f", w*1.1, h), content: place(w*1.1, h, "Im0"), images: img}, "differs across and down"},
		// 75.4 dpi, read at 75: the page would grow by 0.5 %, 8 pt.
		{"page size off by more than a point", pageSpec{mediaBox: fmt.Sprintf("0 0 %.4f %.4f", w*k, h*k), content: place(w*k, h*k, "Im0"), images: img}, "would be"},
	}
	var specs []pageSpec
	for _, tc := range cases {
		if tc.page.mediaBox == "" {
			tc.page.mediaBox = box
		}
		specs = append(specs, tc.page)
	}
	pdf := filepath.Join(t.TempDir(), "cases.pdf")
	p.write(t, pdf, specs)
	m, err := readPDFModel(context.Background(), pdf)
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range cases {
		img, err := pageImageOf(m, i+1)
		var why notOneImage
		switch {
		case tc.why == "" && err != nil:
			t.Errorf("%s: not read from its image: %v", tc.name, err)
		case tc.why == "" && img.dpi != 300:
			t.Errorf("%s: %d dpi", tc.name, img.dpi)
		case tc.why != "" && (!errors.As(err, &why) || !strings.Contains(err.Error(), tc.why)):
			t.Errorf("%s: got %v, %v; want a reason with %q", tc.name, img, err, tc.why)
		}
	}

	// A born-digital page has text, not one image.
	m, err = readPDFModel(context.Background(), c.Get("text.pdf").Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pageImageOf(m, 1); err == nil || !strings.Contains(err.Error(), "not a single image placement") {
		t.Errorf("text page: %v", err)
	}

	// End to end: a rotated page, two images, a soft mask, a /Decode
	// array and one plain page; a text page stays as it is.
	doc := &testPDF{}
	im := doc.flateImage(t, gray, "", "")
	dsm := doc.flateImage(t, gray, "", fmt.Sprintf("/SMask %d 0 R", doc.flateImage(t, opaque, "", "")))
	ddec := doc.flateImage(t, gray, "", "/Decode [0 1]")
	dhalf := doc.flateImage(t, gray.SubImage(image.Rect(0, 0, b.Dx()/2, b.Dy())), "", "")
	mixed := filepath.Join(t.TempDir(), "mixed.pdf")
	doc.write(t, mixed, []pageSpec{
		{mediaBox: box, content: place(w, h, "Im0"), images: map[string]int{"Im0": im}, extra: "/Rotate 0"},
		{mediaBox: box, content: place(w, h, "Im0"), images: map[string]int{"Im0": im}, extra: "/Rotate 180"},
		{mediaBox: box, content: place(w, h, "Im0") + place(w/2, h, "Im1"), images: map[string]int{"Im0": im, "Im1": dhalf}},
		{mediaBox: box, content: place(w, h, "Im0"), images: map[string]int{"Im0": dsm}},
		{mediaBox: box, content: place(w, h, "Im0"), images: map[string]int{"Im0": ddec}},
	})
	withText := filepath.Join(t.TempDir(), "with-text.pdf")
	if out, err := exec.Command("pdfunite", mixed, c.Get("invoice.pdf").Path, withText).CombinedOutput(); err != nil {
		t.Fatalf("pdfunite: %v %s", err, out)
	}
	out := filepath.Join(t.TempDir(), "searchable.pdf")
	res, err := New(Options{Parallelism: 2, TempDir: t.TempDir()}).Process(context.Background(), withText, Request{Language: "eng", Searchable: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages != 6 || res.OCRPages != 5 || res.ExtractedPages != 1 {
		t.Fatalf("result %+v", res)
	}
	pages := strings.Split(res.Text, "\f")
	if len(pages) != 6 {
		t.Fatalf("%d pages of text", len(pages))
	}
	for i, want := range []string{s.Text, "", s.Text, s.Text, s.Text, c.Get("invoice.pdf").Text} {
		if i == 1 {
			continue // upside down
		}
		if cer := corpus.CER(want, pages[i]); cer > 0.02 {
			t.Errorf("page %d: CER %.4f: %q", i+1, cer, pages[i])
		}
	}
	checkSameSizes(t, withText, out)
}

// TestUnreadableImageIsRasterised: image data that passes the inspection
// but that Tesseract's PNG reader refuses (a wrong zlib checksum, which
// poppler forgives) has its page rasterised instead.
func TestUnreadableImageIsRasterised(t *testing.T) {
	corpus.RequireTools(t, "pdftotext", "pdftoppm", "tesseract")
	s := sharedCorpus(t).Get("scan_clean.png")
	gray := scanImage(t, s)
	_, _, _, idat := pngParts(t, gray)
	idat[len(idat)-1] ^= 0xff // Adler-32
	b := gray.Bounds()
	w, h := pts(b.Dx()), pts(b.Dy())
	p := &testPDF{}
	im := p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /DecodeParms << /Predictor 15 /Columns %d >>", b.Dx(), b.Dy(), b.Dx()), idat)
	pdf := filepath.Join(t.TempDir(), "checksum.pdf")
	p.write(t, pdf, []pageSpec{{mediaBox: fmt.Sprintf("0 0 %.4f %.4f", w, h), content: place(w, h, "Im0"), images: map[string]int{"Im0": im}}})
	e := New(Options{Parallelism: 1, TempDir: t.TempDir()})
	if imgs := e.pageImages(context.Background(), pdf, 1, []int{1}); imgs[1] == nil {
		t.Fatal("page not taken as one image")
	}
	res, err := e.Process(context.Background(), pdf, Request{Language: "eng"})
	if err != nil {
		t.Fatal(err)
	}
	if res.OCRPages != 1 || res.ExtractedPages != 0 {
		t.Fatalf("result %+v", res)
	}
	if cer := corpus.CER(s.Text, res.Text); cer > 0.02 {
		t.Errorf("CER %.4f: %q", cer, res.Text)
	}
}

// TestPNGFromFlateImage: the PNG written around an image's Flate data
// decodes with image/png to exactly the source pixels, for grey (8 and 1
// bit), RGB and palettes (short and full, as hex, literal string and
// stream), and for what processing/convert embeds.
func TestPNGFromFlateImage(t *testing.T) {
	const W, H = 61, 23 // odd sizes: rows end inside a byte
	gray := image.NewGray(image.Rect(0, 0, W, H))
	rgb := image.NewRGBA(gray.Bounds())
	pal16 := image.NewPaletted(gray.Bounds(), nil)
	pal100 := image.NewPaletted(gray.Bounds(), nil)
	for i := 0; i < 100; i++ {
		c := color.RGBA{uint8(i * 37), uint8(i * 11), uint8(255 - i*2), 255}
		pal100.Palette = append(pal100.Palette, c)
		if i < 16 {
			pal16.Palette = append(pal16.Palette, c)
		}
	}
	bw := image.NewGray(gray.Bounds()) // 0 or 255 only, stored as 1-bit grey
	for y := 0; y < H; y++ {
		for x := 0; x < W; x++ {
			v := uint8((x*7 + y*13) % 256)
			gray.SetGray(x, y, color.Gray{v})
			rgb.SetRGBA(x, y, color.RGBA{v, uint8(x * 4), uint8(y * 11), 255})
			pal16.SetColorIndex(x, y, uint8((x+y)%16))
			pal100.SetColorIndex(x, y, uint8((x*y)%100))
			if (x+y)%3 == 0 {
				bw.SetGray(x, y, color.Gray{255})
			}
		}
	}
	// 1-bit grey rows, each with filter byte 0 (None).
	var rows bytes.Buffer
	stride := (W + 7) / 8
	for y := 0; y < H; y++ {
		row := make([]byte, 1+stride)
		for x := 0; x < W; x++ {
			if bw.GrayAt(x, y).Y == 255 {
				row[1+x/8] |= 0x80 >> (x % 8)
			}
		}
		rows.Write(row)
	}
	var bwData bytes.Buffer
	zw := zlib.NewWriter(&bwData)
	zw.Write(rows.Bytes())
	zw.Close()

	p := &testPDF{}
	_, _, plte16, _ := pngParts(t, pal16)
	var lit strings.Builder
	for _, c := range plte16 {
		fmt.Fprintf(&lit, "\\%03o", c)
	}
	_, _, plte100, _ := pngParts(t, pal100)
	lookup := p.stream("", plte100)
	w, h := pts(W), pts(H)
	box := fmt.Sprintf("0 0 %.4f %.4f", w, h)
	sources := []struct {
		name string
		img  image.Image
		obj  int
	}{
		{"grey", gray, p.flateImage(t, gray, "", "")},
		{"RGB", rgb, p.flateImage(t, rgb, "", "")},
		{"16 colours, hex palette", pal16, p.flateImage(t, pal16, "", "")},
		{"16 colours, literal palette", pal16, p.flateImage(t, pal16, fmt.Sprintf("[/Indexed /DeviceRGB 15 (%s)]", lit.String()), "")},
		{"100 colours, stream palette", pal100, p.flateImage(t, pal100, fmt.Sprintf("[/Indexed /DeviceRGB 99 %d 0 R]", lookup), "")},
		{"1-bit grey", bw, p.stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /FlateDecode /DecodeParms << /Predictor 15 /Colors 1 /BitsPerComponent 1 /Columns %d >>", W, H, W), bwData.Bytes())},
	}
	var specs []pageSpec
	for _, s := range sources {
		specs = append(specs, pageSpec{mediaBox: box, content: place(w, h, "Im0"), images: map[string]int{"Im0": s.obj}})
	}
	dir := t.TempDir()
	pdf := filepath.Join(dir, "images.pdf")
	p.write(t, pdf, specs)

	// What processing/convert embeds from a palette PNG.
	var palPNG bytes.Buffer
	if err := png.Encode(&palPNG, pal100); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "pal.png")
	if err := os.WriteFile(src, palPNG.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	conv, err := convert.New(convert.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	converted := filepath.Join(dir, "converted.pdf")
	if err := conv.Convert(context.Background(), src, "image/png", converted); err != nil {
		t.Fatal(err)
	}

	check := func(name, pdf string, page int, want image.Image) {
		t.Helper()
		m, err := readPDFModel(context.Background(), pdf)
		if err != nil {
			t.Fatal(err)
		}
		img, err := pageImageOf(m, page)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if img.ext != ".png" {
			t.Fatalf("%s: %s", name, img.ext)
		}
		out := filepath.Join(dir, fmt.Sprintf("page%d.png", page))
		if err := img.write(pdf, out); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		got, err := png.Decode(f)
		if err != nil {
			t.Fatalf("%s: image/png: %v", name, err)
		}
		if got.Bounds() != want.Bounds() {
			t.Fatalf("%s: bounds %v, want %v", name, got.Bounds(), want.Bounds())
		}
		for y := 0; y < H; y++ {
			for x := 0; x < W; x++ {
				r1, g1, b1, a1 := got.At(x, y).RGBA()
				r2, g2, b2, a2 := want.At(x, y).RGBA()
				if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
					t.Fatalf("%s: pixel (%d,%d) is %v, want %v", name, x, y, got.At(x, y), want.At(x, y))
				}
			}
		}
	}
	for i, s := range sources {
		check(s.name, pdf, i+1, s.img)
	}
	check("converted palette PNG", converted, 1, pal100)

	// Data that changed since the inspection is not copied.
	m, err := readPDFModel(context.Background(), pdf)
	if err != nil {
		t.Fatal(err)
	}
	img, err := pageImageOf(m, 1)
	if err != nil {
		t.Fatal(err)
	}
	img.crc++
	if err := img.write(pdf, filepath.Join(dir, "changed.png")); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("changed data: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "changed.png")); !os.IsNotExist(err) {
		t.Errorf("changed data left a file: %v", err)
	}
}

// TestPageImagesUnreadable: a PDF that pdfcpu cannot read, or one that is
// encrypted, has every page rasterised.
func TestPageImagesUnreadable(t *testing.T) {
	c := sharedCorpus(t)
	e := New(Options{})
	for _, name := range []string{"corrupt.pdf", "encrypted.pdf", "zero_pages.pdf"} {
		if imgs := e.pageImages(context.Background(), c.Get(name).Path, 1, []int{1}); len(imgs) != 0 {
			t.Errorf("%s: %v", name, imgs)
		}
	}
	if imgs := e.pageImages(context.Background(), filepath.Join(t.TempDir(), "missing.pdf"), 1, []int{1}); len(imgs) != 0 {
		t.Errorf("missing file: %v", imgs)
	}
}
