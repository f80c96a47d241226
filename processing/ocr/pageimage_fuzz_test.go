package ocr

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// fuzzPDFs are the seeds of FuzzPageImage: one-page PDFs, a plain PNG
// page and a plain JPEG page at 300 dpi, and pages beside them that are
// not one image (rotated, cropped, two images, a palette).
func fuzzPDFs(f *testing.F) [][]byte {
	gray := image.NewGray(image.Rect(0, 0, 120, 90))
	for i := range gray.Pix {
		gray.Pix[i] = uint8(i * 7)
	}
	pal := image.NewPaletted(image.Rect(0, 0, 120, 90), color.Palette{color.White, color.Black, color.Gray{128}})
	for i := range pal.Pix {
		pal.Pix[i] = uint8(i % 3)
	}
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, gray, nil); err != nil {
		f.Fatal(err)
	}
	w, h := pts(120), pts(90)
	box := fmt.Sprintf("0 0 %.4f %.4f", w, h)
	var out [][]byte
	build := func(pages func(p *testPDF) []pageSpec) {
		p := &testPDF{}
		specs := pages(p)
		path := filepath.Join(f.TempDir(), "seed.pdf")
		p.write(f, path, specs)
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	one := func(extra, content string, img func(p *testPDF) int) {
		build(func(p *testPDF) []pageSpec {
			return []pageSpec{{mediaBox: box, extra: extra, content: content, images: map[string]int{"Im0": img(p)}}}
		})
	}
	flate := func(p *testPDF) int { return p.flateImage(f, gray, "", "") }
	dct := func(p *testPDF) int {
		return p.stream("/Type /XObject /Subtype /Image /Width 120 /Height 90 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode", jpg.Bytes())
	}
	one("", place(w, h, "Im0"), flate)
	one("", place(w, h, "Im0"), dct)
	one("", place(w, h, "Im0"), func(p *testPDF) int { return p.flateImage(f, pal, "", "") })
	one("/Rotate 90", place(w, h, "Im0"), flate)
	one(fmt.Sprintf("/CropBox [0 0 %.4f %.4f]", w/2, h), place(w, h, "Im0"), dct)
	one("", place(w, h, "Im0")+place(w/2, h, "Im0"), flate)
	one("", fmt.Sprintf("%.4f 0 0 %.4f 0 0 cm /Im0 Do", w, h), dct)
	return out
}

// FuzzPageImage: whatever the bytes of a PDF, reading it for page images
// never panics (pdfcpu's panics become errors) and ends; a page taken
// as one image is a JPEG or PNG whose data lies within the file as
// recorded (offset, length, CRC), of a size within maxImagePixels, at a
// resolution within minImageDPI–maxImageDPI, and the file written from
// it holds that data (a PNG that image/png reads at the image's size).
// Seeds: fuzzPDFs and testdata/fuzz/FuzzPageImage.
func FuzzPageImage(f *testing.F) {
	for _, b := range fuzzPDFs(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, pdf []byte) {
		if len(pdf) > 1<<20 {
			return
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "in.pdf")
		if err := os.WriteFile(path, pdf, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var m *model.Context
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			m, err = readPDFModel(ctx, path)
		}()
		// A hang is a failure with its input, not a run that never ends.
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("reading a %d-byte PDF has not ended in 2 minutes", len(pdf))
		}
		if err != nil {
			return
		}
		for page := 1; page <= min(m.PageCount, 4); page++ {
			img, err := pageImageOf(m, page)
			if err != nil {
				continue
			}
			end := img.offset + img.length
			if img.offset <= 0 || img.length <= 0 || end > int64(len(pdf)) || end < img.offset {
				t.Fatalf("page %d: image data at %d+%d in %d bytes", page, img.offset, img.length, len(pdf))
			}
			data := pdf[img.offset:end]
			if crc32.ChecksumIEEE(data) != img.crc {
				t.Fatalf("page %d: CRC of the data at %d+%d differs", page, img.offset, img.length)
			}
			if img.width <= 0 || img.height <= 0 || int64(img.width)*int64(img.height) > maxImagePixels ||
				img.dpi < minImageDPI || img.dpi > maxImageDPI {
				t.Fatalf("page %d: %d×%d at %d dpi", page, img.width, img.height, img.dpi)
			}
			out := filepath.Join(dir, fmt.Sprintf("p%d%s", page, img.ext))
			if err := img.write(path, out); err != nil {
				t.Fatalf("page %d: %v", page, err)
			}
			written, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			switch img.ext {
			case ".jpg":
				if !bytes.Equal(written, data) || checkJPEG(written, img.width, img.height, map[int]int{0: 1, 2: 3}[img.colorType]) != nil {
					t.Fatalf("page %d: the JPEG written is not the image data", page)
				}
			case ".png":
				if !validPNGDepth(img.colorType, img.depth) || (img.colorType == 3 && len(img.palette) != 3<<img.depth) {
					t.Fatalf("page %d: PNG of colour type %d, depth %d, palette %d bytes", page, img.colorType, img.depth, len(img.palette))
				}
				cfg, err := png.DecodeConfig(bytes.NewReader(written))
				if err != nil || cfg.Width != img.width || cfg.Height != img.height || !bytes.Contains(written, data) {
					t.Fatalf("page %d: PNG written %d×%d (%v), want %d×%d with the data", page, cfg.Width, cfg.Height, err, img.width, img.height)
				}
			default:
				t.Fatalf("page %d: extension %q", page, img.ext)
			}
		}
	})
}

// FuzzParsePlacement: parsePlacement never panics; what it accepts is one
// upright placement (a, d > 0 and finite, e and f finite) of an XObject
// whose name has no delimiter, and written back as a content stream it
// parses to the same placement.
func FuzzParsePlacement(f *testing.F) {
	for _, s := range []string{"q\n612 0 0 792 0 0 cm\n/Im0 Do\nQ\n", "1 0 0 1 0 0 cm /X Do", "q 1 0 0 -1 0 0 cm /Im0 Do Q",
		"% comment\n+.5 0 0 -.0 -1 +2 cm\r/Im#20 Do", "q 1 0 0 1 0 0 cm /Im0 Do", "1e3 0 0 1 0 0 cm /I Do", "q\x00 1 0 0 1 0 0 cm /I Do Q"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		pl, err := parsePlacement(content)
		if err != nil {
			if _, ok := err.(notOneImage); !ok {
				t.Fatalf("%q: %v (%T)", content, err, err)
			}
			return
		}
		for _, v := range []float64{pl.a, pl.d, pl.e, pl.f} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%q: %+v", content, pl)
			}
		}
		if pl.a <= 0 || pl.d <= 0 || pl.name == "" || strings.ContainsAny(pl.name, "/#()<>[]{}% \t\r\n\f\x00") {
			t.Fatalf("%q accepted as %+v", content, pl)
		}
		n := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
		again, err := parsePlacement([]byte(fmt.Sprintf("q %s 0 0 %s %s %s cm /%s Do Q", n(pl.a), n(pl.d), n(pl.e), n(pl.f), pl.name)))
		if err != nil || *again != *pl {
			t.Fatalf("%q: %+v written back reads %+v, %v", content, pl, again, err)
		}
	})
}
