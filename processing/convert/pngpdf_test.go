package convert

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"docflow/internal/corpus"
)

// TestPNGToPDFKeepsPixels embeds PNGs of every colour type and depth that
// pngToPDF takes and reads the image back out of the PDF with poppler: the
// pixels must be the source's, and the page the size its pHYs gives.
func TestPNGToPDFKeepsPixels(t *testing.T) {
	corpus.RequireTools(t, "pdfimages", "pdfinfo")
	const w, h = 97, 61 // odd sizes: rows that do not fill their last byte
	gray := image.NewGray(image.Rect(0, 0, w, h))
	rgb := image.NewRGBA(image.Rect(0, 0, w, h))
	bw := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White})
	pal16 := make(color.Palette, 16)
	for i := range pal16 {
		pal16[i] = color.RGBA{uint8(i * 16), uint8(255 - i*16), uint8(i * 7), 255}
	}
	p16 := image.NewPaletted(image.Rect(0, 0, w, h), pal16)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			gray.SetGray(x, y, color.Gray{uint8(x*3 + y)})
			rgb.SetRGBA(x, y, color.RGBA{uint8(x * 2), uint8(y * 4), uint8(x ^ y), 255})
			bw.SetColorIndex(x, y, uint8((x/3+y/5)%2))
			p16.SetColorIndex(x, y, uint8((x+y)%16))
		}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		img  image.Image
		dpi  int // 0: no pHYs chunk
	}{
		{"gray8", gray, 300}, {"rgb8", rgb, 0}, {"bilevel", bw, 200}, {"palette4", p16, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "in.png")
			if tc.dpi > 0 {
				if err := corpus.WritePNG(src, tc.img, tc.dpi); err != nil {
					t.Fatal(err)
				}
			} else {
				writePNG(t, src, tc.img)
			}
			out := filepath.Join(dir, "out.pdf")
			if err := pngToPDF(src, out); err != nil {
				t.Fatal(err)
			}
			if info, err := CheckPDF(ctx, out, 0); err != nil || info.Pages != 1 {
				t.Fatalf("CheckPDF: %+v %v", info, err)
			}
			dpi := tc.dpi
			if dpi == 0 {
				dpi = 96
			}
			pi, _ := exec.Command("pdfinfo", out).Output()
			var pw, ph float64
			if i := strings.Index(string(pi), "Page size:"); i < 0 {
				t.Fatalf("pdfinfo: %s", pi)
			} else {
				fmt.Sscanf(string(pi[i+len("Page size:"):]), "%g x %g", &pw, &ph)
			}
			if wantW, wantH := float64(w)*72/float64(dpi), float64(h)*72/float64(dpi); math.Abs(pw-wantW) > 0.01 || math.Abs(ph-wantH) > 0.01 {
				t.Errorf("page %g x %g pts, want %g x %g", pw, ph, wantW, wantH)
			}
			base := filepath.Join(dir, "page")
			if out, err := exec.Command("pdfimages", "-png", out, base).CombinedOutput(); err != nil {
				t.Fatalf("pdfimages: %v: %s", err, out)
			}
			f, err := os.Open(base + "-000.png")
			if err != nil {
				t.Fatal(err)
			}
			got, err := png.Decode(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if got.Bounds().Dx() != w || got.Bounds().Dy() != h {
				t.Fatalf("rendered %v, want %dx%d", got.Bounds(), w, h)
			}
			const tol = 0
			bad := 0
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					r1, g1, b1, _ := tc.img.At(x, y).RGBA()
					r2, g2, b2, _ := got.At(x, y).RGBA()
					if diff(r1, r2) > tol || diff(g1, g2) > tol || diff(b1, b2) > tol {
						bad++
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%d of %d pixels differ from the source", bad, w*h)
			}
		})
	}
}

// TestPNGToPDFFallsBack: what a PDF image cannot hold as it is goes to
// img2pdf, with nothing written.
func TestPNGToPDFFallsBack(t *testing.T) {
	dir := t.TempDir()
	alpha := image.NewNRGBA(image.Rect(0, 0, 4, 4))
	deep := image.NewGray16(image.Rect(0, 0, 4, 4))
	trns := image.NewPaletted(image.Rect(0, 0, 4, 4), color.Palette{color.Transparent, color.White})
	for name, img := range map[string]image.Image{"alpha": alpha, "gray16": deep, "trns": trns} {
		src := filepath.Join(dir, name+".png")
		writePNG(t, src, img)
		out := filepath.Join(dir, name+".pdf")
		if err := pngToPDF(src, out); !errors.Is(err, errPNGFallback) {
			t.Errorf("%s: err %v, want the img2pdf fallback", name, err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: output left behind", name)
		}
	}
	// Interlaced: the IHDR's last byte.
	src := filepath.Join(dir, "gray.png")
	writePNG(t, src, image.NewGray(image.Rect(0, 0, 4, 4)))
	b, _ := os.ReadFile(src)
	b[8+8+12] = 1
	os.WriteFile(src, b, 0o644)
	if err := pngToPDF(src, filepath.Join(dir, "il.pdf")); !errors.Is(err, errPNGFallback) {
		t.Errorf("interlaced: err %v, want the img2pdf fallback", err)
	}
	// Truncated: no IEND.
	os.WriteFile(src, b[:len(b)-12], 0o644)
	if err := pngToPDF(src, filepath.Join(dir, "cut.pdf")); err == nil {
		t.Error("truncated PNG converted")
	}
}

func writePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func diff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}
