package corpus

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/image/bmp"
)

// Sample is one generated file.
type Sample struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	MimeType string `json:"mime_type"`
	// Text is the ground truth a reader of the document should get ("" for
	// hostile samples). Lines are joined with newlines, pages with "\n\n".
	Text  string `json:"text,omitempty"`
	Pages int    `json:"pages,omitempty"`
	// Scanned is true for images of text (OCR needed), Noisy for the
	// noise-and-skew variant.
	Scanned bool `json:"scanned,omitempty"`
	Noisy   bool `json:"noisy,omitempty"`
	// Hostile samples must be refused with a clear error.
	Hostile bool   `json:"hostile,omitempty"`
	Why     string `json:"why,omitempty"`
}

// Options shape a generated corpus.
type Options struct {
	Seed int64
	// ScanWidthMM and ScanHeightMM set the page size of scanned samples
	// (default A4); tests use smaller pages to keep OCR quick.
	ScanWidthMM, ScanHeightMM float64
	// ScanLines is the number of text lines per scanned page (default 12).
	ScanLines int
	// TIFFPages is the page count of the multi-page TIFF (default 2).
	TIFFPages int
}

func (o *Options) defaults() {
	if o.ScanLines <= 0 {
		o.ScanLines = 12
	}
	if o.TIFFPages <= 0 {
		o.TIFFPages = 2
	}
}

// Corpus is the set of generated samples, by name.
type Corpus struct {
	Dir     string
	Samples map[string]*Sample
}

// Get returns a sample by name or panics: names are fixed by Generate, so
// a miss is a bug in the caller.
func (c *Corpus) Get(name string) *Sample {
	s, ok := c.Samples[name]
	if !ok {
		panic("corpus: no sample " + name)
	}
	return s
}

// Generate writes every sample into dir.
func Generate(dir string, o Options) (*Corpus, error) {
	o.defaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("corpus dir: %w", err)
	}
	c := &Corpus{Dir: dir, Samples: map[string]*Sample{}}
	add := func(s *Sample, write func(path string) error) error {
		s.Path = filepath.Join(dir, s.Name)
		if err := write(s.Path); err != nil {
			return fmt.Errorf("corpus %s: %w", s.Name, err)
		}
		c.Samples[s.Name] = s
		return nil
	}
	seed := o.Seed
	para := Lines(seed, 8, 70)
	join := func(l []string) string { return strings.Join(l, "\n") }
	scan := ScanOptions{WidthMM: o.ScanWidthMM, HeightMM: o.ScanHeightMM}
	scanLines := Lines(seed+100, o.ScanLines, 50)
	noisyLines := Lines(seed+200, o.ScanLines, 50)
	cleanPage, err := RenderPage(scanLines, scan)
	if err != nil {
		return nil, err
	}
	ns := Noisy(seed)
	ns.WidthMM, ns.HeightMM = o.ScanWidthMM, o.ScanHeightMM
	noisyPage, err := RenderPage(noisyLines, ns)
	if err != nil {
		return nil, err
	}
	var tiffPages []*image.Gray
	var tiffText []string
	for i := 0; i < o.TIFFPages; i++ {
		l := Lines(seed+300+int64(i), o.ScanLines, 50)
		p, err := RenderPage(l, scan)
		if err != nil {
			return nil, err
		}
		tiffPages = append(tiffPages, p)
		tiffText = append(tiffText, join(l))
	}
	// A small landscape photo for the colour formats (GIF, BMP, WebP, JPEG).
	photoLines := Lines(seed+400, 3, 30)
	photo, err := RenderPage(photoLines, ScanOptions{DPI: 150, WidthMM: 120, HeightMM: 40, FontSize: 14})
	if err != nil {
		return nil, err
	}
	tablePDF := [][]string{Lines(seed+500, 30, 80), Lines(seed+501, 30, 80), Lines(seed+502, 30, 80)}
	var pdfText []string
	for _, p := range tablePDF {
		pdfText = append(pdfText, join(p))
	}
	rows := [][]string{{"Item", "Quantity", "Price"}, {"Consulting", "10", "1000"}, {"Travel", "2", "250"}, {"Total", "", "1250"}}
	var rowText []string
	for _, r := range rows {
		rowText = append(rowText, strings.Join(r, " "))
	}
	slides := [][]string{Lines(seed+600, 3, 40), Lines(seed+601, 3, 40)}

	steps := []struct {
		s     *Sample
		write func(string) error
	}{
		{&Sample{Name: "document.docx", MimeType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Text: join(para)},
			func(p string) error { return WriteDOCX(p, para) }},
		{&Sample{Name: "sheet.xlsx", MimeType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", Text: join(rowText)},
			func(p string) error { return WriteXLSX(p, rows) }},
		{&Sample{Name: "slides.pptx", MimeType: "application/vnd.openxmlformats-officedocument.presentationml.presentation", Text: join(slides[0]) + "\n\n" + join(slides[1]), Pages: 2},
			func(p string) error { return WritePPTX(p, slides) }},
		{&Sample{Name: "notes.txt", MimeType: "text/plain", Text: join(para)},
			func(p string) error { return os.WriteFile(p, []byte(join(para)+"\n"), 0o644) }},
		{&Sample{Name: "table.csv", MimeType: "text/csv", Text: join(rowText)},
			func(p string) error {
				var b strings.Builder
				for _, r := range rows {
					b.WriteString(strings.Join(r, ",") + "\n")
				}
				return os.WriteFile(p, []byte(b.String()), 0o644)
			}},
		{&Sample{Name: "letter.rtf", MimeType: "application/rtf", Text: join(para)},
			func(p string) error {
				return os.WriteFile(p, []byte(`{\rtf1\ansi\deff0{\fonttbl{\f0 Helvetica;}}\f0\fs24 `+strings.Join(para, `\par `)+`\par}`), 0o644)
			}},
		{&Sample{Name: "text.pdf", MimeType: "application/pdf", Text: strings.Join(pdfText, "\n\n"), Pages: 3},
			func(p string) error { return WriteTextPDF(p, tablePDF) }},
		{&Sample{Name: "invoice.pdf", MimeType: "application/pdf", Text: join(InvoiceLines(seed)), Pages: 1},
			func(p string) error { return WriteTextPDF(p, [][]string{InvoiceLines(seed)}) }},
		{&Sample{Name: "scan_clean.png", MimeType: "image/png", Text: join(scanLines), Pages: 1, Scanned: true},
			func(p string) error { return WritePNG(p, cleanPage, 300) }},
		{&Sample{Name: "scan_noisy.png", MimeType: "image/png", Text: join(noisyLines), Pages: 1, Scanned: true, Noisy: true},
			func(p string) error { return WritePNG(p, noisyPage, 300) }},
		{&Sample{Name: "scan_multi.tiff", MimeType: "image/tiff", Text: strings.Join(tiffText, "\n\n"), Pages: len(tiffPages), Scanned: true},
			func(p string) error { return WriteTIFF(p, tiffPages, 300) }},
		{&Sample{Name: "photo.gif", MimeType: "image/gif", Text: join(photoLines), Pages: 1, Scanned: true},
			func(p string) error {
				pal := image.NewPaletted(photo.Bounds(), color.Palette{color.White, color.Black})
				for i, v := range photo.Pix {
					if v < 128 {
						pal.Pix[i] = 1
					}
				}
				var b bytes.Buffer
				if err := gif.Encode(&b, pal, nil); err != nil {
					return err
				}
				return os.WriteFile(p, b.Bytes(), 0o644)
			}},
		{&Sample{Name: "photo.bmp", MimeType: "image/bmp", Text: join(photoLines), Pages: 1, Scanned: true},
			func(p string) error {
				var b bytes.Buffer
				if err := bmp.Encode(&b, photo); err != nil {
					return err
				}
				return os.WriteFile(p, b.Bytes(), 0o644)
			}},
		{&Sample{Name: "photo.webp", MimeType: "image/webp", Text: join(photoLines), Pages: 1, Scanned: true},
			func(p string) error { return WriteWebP(p, photo) }},
		{&Sample{Name: "photo_rotated.jpg", MimeType: "image/jpeg", Text: join(photoLines), Pages: 1, Scanned: true,
			Why: "pixels stored turned 90° counter-clockwise with EXIF orientation 6: upright only if the rotation is honoured"},
			func(p string) error { return WriteJPEGWithOrientation(p, RotateCCW(photo), 6, 150) }},
		{&Sample{Name: "drawing.svg", MimeType: "image/svg+xml", Text: "Quarterly figures approved", Pages: 1},
			func(p string) error {
				return os.WriteFile(p, []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="400" height="120" viewBox="0 0 400 120"><rect width="400" height="120" fill="white"/><text x="20" y="60" font-family="DejaVu Sans, sans-serif" font-size="24">Quarterly figures approved</text></svg>`), 0o644)
			}},
		{&Sample{Name: "bomb.png", MimeType: "image/png", Hostile: true, Why: "header claims 100000×100000 pixels (10 gigapixels)"},
			func(p string) error { return WriteBombPNG(p, 100000, 100000) }},
		{&Sample{Name: "zipbomb.docx", MimeType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Hostile: true, Why: "20 entries of 100 MiB zeros: 2000 MiB from about 2 MB"},
			func(p string) error { return WriteZipBombDOCX(p, 20, 100<<20) }},
		{&Sample{Name: "corrupt.pdf", MimeType: "application/pdf", Hostile: true, Why: "truncated in the middle of the body"},
			WriteCorruptPDF},
		{&Sample{Name: "encrypted.pdf", MimeType: "application/pdf", Hostile: true, Why: "AES-256 with a user password"},
			func(p string) error { return WriteEncryptedPDF(p, "secret") }},
		{&Sample{Name: "zero_pages.pdf", MimeType: "application/pdf", Hostile: true, Why: "empty page tree"},
			WriteZeroPagePDF},
	}
	for _, st := range steps {
		if err := add(st.s, st.write); err != nil {
			return nil, err
		}
	}
	return c, nil
}
