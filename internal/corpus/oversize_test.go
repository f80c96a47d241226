package corpus

import (
	"archive/zip"
	"bytes"
	"image"
	"image/png"
	"path/filepath"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"

	"docflow/processing/pdfconf"
)

// The oversized samples are what they claim: a complete white PNG, a
// readable one-page PDF of the given size, a DOCX carrying the picture.
func TestOversizeSamples(t *testing.T) {
	img, err := png.Decode(bytes.NewReader(BlankPNG(301, 7)))
	if err != nil {
		t.Fatal(err)
	}
	g, ok := img.(*image.Gray)
	if !ok || g.Bounds().Dx() != 301 || g.Bounds().Dy() != 7 {
		t.Fatalf("decoded %T %v", img, img.Bounds())
	}
	for _, v := range g.Pix {
		if v != 0xFF {
			t.Fatal("not white")
		}
	}
	if n := len(BlankPNG(13000, 13000)); n > 600<<10 {
		t.Fatalf("13000² PNG takes %d bytes", n)
	}

	pdf := HugePagePDF(4800, 4800)
	if len(pdf) > 500 {
		t.Fatalf("huge-page PDF takes %d bytes", len(pdf))
	}
	dims, err := api.PageDims(bytes.NewReader(pdf), pdfconf.New())
	if err != nil || len(dims) != 1 || dims[0].Width != 4800 || dims[0].Height != 4800 {
		t.Fatalf("page dims %v, %v", dims, err)
	}

	path := filepath.Join(t.TempDir(), "p.docx")
	pic := BlankPNG(40, 30)
	if err := WriteDOCXWithImage(path, "x", pic); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name == "word/media/image1.png" {
			rc, _ := f.Open()
			var b bytes.Buffer
			b.ReadFrom(rc)
			rc.Close()
			if !bytes.Equal(b.Bytes(), pic) {
				t.Fatal("picture changed")
			}
			return
		}
	}
	t.Fatal("no picture in the DOCX")
}
