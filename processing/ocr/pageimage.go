package ocr

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"docflow/processing/pdfconf"
)

// Limits of the page image inspection.
const (
	// maxInspectBytes bounds the PDFs that are inspected for page images.
	// NOTE: pdfcpu loads every stream of a file into memory when it reads
	// it, so the inspection costs about the file's size in heap for a
	// moment; a larger PDF has every page rasterised instead.
	maxInspectBytes = 256 << 20
	// maxDecodeBytes bounds what pdfcpu inflates while reading (object
	// streams, content streams): a small compressed bomb fails the
	// inspection instead of filling memory.
	maxDecodeBytes = 32 << 20
	// maxContentBytes bounds a page content stream that can be a single
	// image placement (a few dozen bytes in practice).
	maxContentBytes = 4096
	// minImageDPI and maxImageDPI bound the resolution of a page image
	// handed to Tesseract as it is.
	// NOTE: Tesseract ignores a --dpi below 70 and estimates the
	// resolution instead, which would size its page PDF wrongly.
	minImageDPI, maxImageDPI = 70, 1200
	// maxImagePixels bounds the size of a page image read as it is.
	maxImagePixels = 1 << 28
)

// pngSignature starts every PNG file.
const pngSignature = "\x89PNG\r\n\x1a\n"

// errNoPDFModel is returned by readPDFModel for a PDF it does not inspect.
var errNoPDFModel = errors.New("pdf not inspected")

// pageImage is a page that is one image covering it, in a form Tesseract
// reads without any decoding on our side: a JPEG (DCTDecode stream data
// as it is) or a PNG whose IDAT is the stream data of a FlateDecode image
// with PNG predictors (the inverse of processing/convert's pngToPDF).
// Only where the data lies in the PDF is kept, so that the pages of a long
// document cost no memory until their worker copies them.
type pageImage struct {
	ext    string // ".jpg" or ".png"
	offset int64  // of the image stream's data in the PDF file
	length int64  // of that data
	crc    uint32 // CRC-32 (IEEE) of that data, checked when it is copied
	width  int
	height int
	// depth, colorType and palette describe the PNG: bits per sample,
	// colour type (0 grey, 2 RGB, 3 palette) and PLTE (RGB triples).
	depth     int
	colorType int
	palette   []byte
	dpi       int // resolution handed to Tesseract
}

// notOneImage says why a page is not read from its image.
type notOneImage string

func (e notOneImage) Error() string { return string(e) }

// notOne returns a notOneImage error with a formatted reason.
func notOne(format string, args ...any) error {
	return notOneImage(fmt.Sprintf(format, args...))
}

// pageImages inspects pdf once and returns the pages of need that are one
// image covering the page, each with where its image data lies (see
// pageImageOf). Any failure to read the PDF with pdfcpu leaves the map
// empty: every page is then rasterised as before.
//
// Inspections take turns across the Engine, since each holds about its
// file's size in memory while pdfcpu reads it.
func (e *Engine) pageImages(ctx context.Context, pdf string, pages int, need []int) map[int]*pageImage {
	if e.noExtract {
		return nil
	}
	select {
	case e.inspect <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	defer func() { <-e.inspect }()
	m, err := readPDFModel(ctx, pdf)
	if err != nil || m.PageCount != pages {
		// NOTE: pdfcpu and poppler must agree on the pages, or page N
		// of one could be another page of the other.
		return nil
	}
	imgs := make(map[int]*pageImage, len(need))
	for _, p := range need {
		if ctx.Err() != nil {
			return nil
		}
		// NOTE: an image larger than the page bound is rasterised at a
		// resolution that fits instead: pdftoppm scales it down line by
		// line, Tesseract would hold all of it.
		if img, err := pageImageOf(m, p); err == nil && int64(img.width)*int64(img.height) <= e.opts.MaxPagePixels {
			imgs[p] = img
		}
	}
	return imgs
}

// readPDFModel reads and validates pdf with pdfcpu in relaxed mode, as
// processing/convert checks PDFs. It refuses files above maxInspectBytes
// and encrypted ones (their stream data is not what Tesseract could read),
// and turns a parser panic on hostile input into an error.
func readPDFModel(ctx context.Context, pdf string) (m *model.Context, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("read pdf: pdfcpu panicked: %v", r)
		}
	}()
	f, err := os.Open(pdf)
	if err != nil {
		return nil, fmt.Errorf("read pdf: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read pdf: %w", err)
	}
	if st.Size() > maxInspectBytes {
		return nil, fmt.Errorf("read pdf: %d bytes: %w", st.Size(), errNoPDFModel)
	}
	conf := pdfconf.New()
	conf.ValidationMode = model.ValidationRelaxed
	conf.Limits.MaxStreamBytes = maxInspectBytes
	conf.Limits.MaxDecodeBytes = maxDecodeBytes
	m, err = pdfcpu.ReadWithContext(ctx, f, conf)
	if err != nil {
		return nil, fmt.Errorf("read pdf: %w", err)
	}
	if m.Encrypt != nil {
		return nil, fmt.Errorf("read pdf: encrypted: %w", errNoPDFModel)
	}
	if err := api.ValidateContext(m); err != nil {
		return nil, fmt.Errorf("validate pdf: %w", err)
	}
	if m.PageCount <= 0 {
		return nil, fmt.Errorf("read pdf: no pages: %w", errNoPDFModel)
	}
	return m, nil
}

// pageImageOf decides whether a page of m (1-based) is one image covering
// the page that Tesseract can read as it is, and returns it; otherwise a
// notOneImage error says why not. All of these must hold:
//   - the page has no /Rotate (or 0), no /UserUnit, no annotations, and a
//     CropBox (if any) equal to its MediaBox;
//   - its content is a single placement "q a 0 0 d e f cm /Name Do Q"
//     (q and Q optional together) with a, d > 0 (no flip or turn), so that
//     nothing else (text, another image) is drawn;
//   - /Name is an image XObject covering the MediaBox within 1 %;
//   - the image is a plain DCTDecode JPEG in DeviceGray or DeviceRGB, or
//     FlateDecode with a PNG predictor in DeviceGray, DeviceRGB or
//     [/Indexed /DeviceRGB …], with no /SMask, /Mask, /Decode, /ImageMask
//     or optional content;
//   - its resolution is between minImageDPI and maxImageDPI, the same
//     across and down within 2 %, and Tesseract's page at the rounded
//     resolution is the page's size within a point.
func pageImageOf(m *model.Context, page int) (img *pageImage, err error) {
	defer func() {
		if r := recover(); r != nil {
			img, err = nil, fmt.Errorf("page %d: pdfcpu panicked: %v", page, r)
		}
	}()
	x := m.XRefTable
	d, _, inh, err := x.PageDict(page, false)
	if err != nil {
		return nil, fmt.Errorf("page %d: %w", page, err)
	}
	if d == nil || inh == nil {
		return nil, notOne("page %d not found", page)
	}
	if inh.Rotate%360 != 0 {
		return nil, notOne("page is rotated by %d°", inh.Rotate)
	}
	if o, ok := d.Find("UserUnit"); ok && o != nil {
		if u, err := x.DereferenceNumber(o); err != nil || u != 1 {
			return nil, notOne("page has a /UserUnit")
		}
	}
	if o, ok := d.Find("Annots"); ok && o != nil {
		if a, err := x.DereferenceArray(o); err != nil || len(a) > 0 {
			return nil, notOne("page has annotations")
		}
	}
	mb := inh.MediaBox
	if mb == nil || mb.Width() <= 0 || mb.Height() <= 0 {
		return nil, notOne("page has no usable MediaBox")
	}
	if cb := inh.CropBox; cb != nil && (math.Abs(cb.LL.X-mb.LL.X) > 1 || math.Abs(cb.LL.Y-mb.LL.Y) > 1 ||
		math.Abs(cb.UR.X-mb.UR.X) > 1 || math.Abs(cb.UR.Y-mb.UR.Y) > 1) {
		return nil, notOne("page is cropped")
	}

	content, err := pageContent(x, d)
	if err != nil {
		return nil, err
	}
	pl, err := parsePlacement(content)
	if err != nil {
		return nil, err
	}
	pw, ph := mb.Width(), mb.Height()
	if math.Abs(pl.e-mb.LL.X) > 0.01*pw || math.Abs(pl.e+pl.a-mb.UR.X) > 0.01*pw ||
		math.Abs(pl.f-mb.LL.Y) > 0.01*ph || math.Abs(pl.f+pl.d-mb.UR.Y) > 0.01*ph {
		return nil, notOne("image does not cover the page")
	}

	sd, err := xobject(x, inh.Resources, pl.name)
	if err != nil {
		return nil, err
	}
	img, err = imageOf(x, sd)
	if err != nil {
		return nil, err
	}

	dpiX, dpiY := float64(img.width)*72/pw, float64(img.height)*72/ph
	if dpiX < minImageDPI || dpiY < minImageDPI || dpiX > maxImageDPI || dpiY > maxImageDPI {
		return nil, notOne("image resolution %.0f×%.0f dpi out of range", dpiX, dpiY)
	}
	if math.Abs(dpiX-dpiY) > 0.02*max(dpiX, dpiY) {
		return nil, notOne("image resolution %.1f×%.1f dpi differs across and down", dpiX, dpiY)
	}
	img.dpi = int(math.Round(dpiX))
	// NOTE: Tesseract sizes its page PDF from one resolution, and the
	// searchable PDF takes that page in place of the original one.
	if tw, th := float64(img.width)*72/float64(img.dpi), float64(img.height)*72/float64(img.dpi); math.Abs(tw-pw) > 1 || math.Abs(th-ph) > 1 {
		return nil, notOne("page from the image at %d dpi would be %.1f×%.1f pt, not %.1f×%.1f", img.dpi, tw, th, pw, ph)
	}
	return img, nil
}

// pageContent returns the page's content streams, decoded and joined by
// newlines, refusing any that is too long to be a single placement before
// decoding it.
func pageContent(x *model.XRefTable, d types.Dict) ([]byte, error) {
	o, ok := d.Find("Contents")
	if !ok || o == nil {
		return nil, notOne("page has no content")
	}
	o, err := x.Dereference(o)
	if err != nil {
		return nil, fmt.Errorf("page content: %w", err)
	}
	var streams []types.Object
	switch o := o.(type) {
	case types.StreamDict:
		streams = []types.Object{o}
	case types.Array:
		streams = o
	default:
		return nil, notOne("page has no content stream")
	}
	var out []byte
	for _, s := range streams {
		sd, _, err := x.DereferenceStreamDict(s)
		if err != nil {
			return nil, fmt.Errorf("page content: %w", err)
		}
		if sd == nil {
			continue
		}
		if len(sd.Raw) > maxContentBytes {
			return nil, notOne("page content is more than one image")
		}
		// Decode a copy: the model's stream keeps its encoded form.
		c := *sd
		c.Content = nil
		if err := c.DecodeWithLimit(maxContentBytes); err != nil {
			return nil, fmt.Errorf("page content: %w", err)
		}
		if len(out)+len(c.Content) > maxContentBytes {
			return nil, notOne("page content is more than one image")
		}
		out = append(append(out, c.Content...), '\n')
	}
	return out, nil
}

// placement is the image drawn by "a 0 0 d e f cm /name Do".
type placement struct {
	a, d, e, f float64
	name       string
}

// parsePlacement parses a content stream that only draws one XObject:
// "q a 0 0 d e f cm /Name Do Q", q and Q being optional together, with
// comments allowed, and a, d > 0.
func parsePlacement(content []byte) (*placement, error) {
	var toks []string
	for _, line := range strings.FieldsFunc(string(content), func(r rune) bool { return r == '\n' || r == '\r' }) {
		if i := strings.IndexByte(line, '%'); i >= 0 {
			line = line[:i]
		}
		toks = append(toks, strings.FieldsFunc(line, func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\f' || r == 0
		})...)
	}
	if len(toks) == 11 && toks[0] == "q" && toks[10] == "Q" {
		toks = toks[1:10]
	}
	if len(toks) != 9 || toks[6] != "cm" || toks[8] != "Do" {
		return nil, notOne("page content is not a single image placement")
	}
	var n [6]float64
	for i := range n {
		v, err := pdfNumber(toks[i])
		if err != nil {
			return nil, notOne("page content is not a single image placement")
		}
		n[i] = v
	}
	if n[1] != 0 || n[2] != 0 || n[0] <= 0 || n[3] <= 0 {
		return nil, notOne("image is turned or flipped")
	}
	name := toks[7]
	if len(name) < 2 || name[0] != '/' || strings.ContainsAny(name[1:], "/#()<>[]{}%") {
		return nil, notOne("page content is not a single image placement")
	}
	return &placement{a: n[0], d: n[3], e: n[4], f: n[5], name: name[1:]}, nil
}

// pdfNumber parses a PDF number (integer or real: no exponent, no hex).
func pdfNumber(s string) (float64, error) {
	if s == "" || strings.IndexFunc(s, func(r rune) bool {
		return (r < '0' || r > '9') && r != '.' && r != '-' && r != '+'
	}) >= 0 {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	return strconv.ParseFloat(s, 64)
}

// xobject returns the image XObject called name in the page resources.
func xobject(x *model.XRefTable, res types.Dict, name string) (*types.StreamDict, error) {
	if res == nil {
		return nil, notOne("page has no resources")
	}
	o, ok := res.Find("XObject")
	if !ok || o == nil {
		return nil, notOne("page has no XObject resources")
	}
	xo, err := x.DereferenceDict(o)
	if err != nil || xo == nil {
		return nil, notOne("page has no XObject resources")
	}
	o, ok = xo.Find(name)
	if !ok || o == nil {
		return nil, notOne("XObject /%s not found", name)
	}
	sd, _, err := x.DereferenceStreamDict(o)
	if err != nil || sd == nil {
		return nil, notOne("XObject /%s is not a stream", name)
	}
	if st := sd.Subtype(); st == nil || *st != "Image" {
		return nil, notOne("XObject /%s is not an image", name)
	}
	return sd, nil
}

// imageOf checks an image XObject and returns how to write it as a JPEG
// or PNG file (without the resolution).
func imageOf(x *model.XRefTable, sd *types.StreamDict) (*pageImage, error) {
	for _, k := range []string{"SMask", "Mask", "Decode", "OC"} {
		if o, ok := sd.Find(k); ok && o != nil {
			return nil, notOne("image has a /%s", k)
		}
	}
	if o, ok := sd.Find("ImageMask"); ok && o != nil {
		if b, err := x.DereferenceBoolean(o, model.V10); err != nil || b == nil || b.Value() {
			return nil, notOne("image is a mask")
		}
	}
	if o, ok := sd.Find("SMaskInData"); ok && o != nil {
		if n, err := x.DereferenceInteger(o); err != nil || n == nil || n.Value() != 0 {
			return nil, notOne("image has a /SMaskInData")
		}
	}
	w, okW := intEntry(x, sd.Dict, "Width")
	h, okH := intEntry(x, sd.Dict, "Height")
	bpc, okB := intEntry(x, sd.Dict, "BitsPerComponent")
	if !okW || !okH || !okB || w <= 0 || h <= 0 || int64(w)*int64(h) > maxImagePixels {
		return nil, notOne("image has no usable size")
	}
	filter, parms, err := soleFilter(x, sd.Dict)
	if err != nil {
		return nil, err
	}
	colorType, palette, err := colorSpace(x, sd.Dict, bpc)
	if err != nil {
		return nil, err
	}
	if sd.StreamLength == nil || int64(len(sd.Raw)) != *sd.StreamLength || len(sd.Raw) == 0 || sd.StreamOffset <= 0 {
		return nil, notOne("image stream length is not as declared")
	}
	if len(sd.Raw) > math.MaxInt32 {
		return nil, notOne("image stream too long for one PNG chunk")
	}
	img := &pageImage{
		offset: sd.StreamOffset, length: int64(len(sd.Raw)), crc: crc32.ChecksumIEEE(sd.Raw),
		width: w, height: h, depth: bpc, colorType: colorType, palette: palette,
	}
	switch filter {
	case "DCTDecode", "DCT":
		// NOTE: Adobe CMYK JPEGs (and indexed ones) may be mis-read by
		// leptonica; only grey and RGB are handed over.
		if parms != nil && parms.Len() > 0 {
			return nil, notOne("JPEG image has /DecodeParms")
		}
		comps := 0
		switch colorType {
		case 0:
			comps = 1
		case 2:
			comps = 3
		}
		if comps == 0 || bpc != 8 {
			return nil, notOne("JPEG image is neither 8-bit grey nor RGB")
		}
		if err := checkJPEG(sd.Raw, w, h, comps); err != nil {
			return nil, err
		}
		img.ext = ".jpg"
	case "FlateDecode", "Fl":
		if err := checkPredictor(x, parms, w, bpc, colorType); err != nil {
			return nil, err
		}
		if !validPNGDepth(colorType, bpc) {
			return nil, notOne("%d-bit samples cannot be a PNG of colour type %d", bpc, colorType)
		}
		// A zlib stream, as PNG wants it: method 8, window up to 32K,
		// header check, no preset dictionary.
		if len(sd.Raw) < 2 || sd.Raw[0]&0x0f != 8 || sd.Raw[0]>>4 > 7 || (uint16(sd.Raw[0])<<8|uint16(sd.Raw[1]))%31 != 0 || sd.Raw[1]&0x20 != 0 {
			return nil, notOne("image data is not a zlib stream")
		}
		img.ext = ".png"
	default:
		return nil, notOne("image filter /%s", filter)
	}
	return img, nil
}

// intEntry returns an integer entry of d, following a reference.
func intEntry(x *model.XRefTable, d types.Dict, key string) (int, bool) {
	o, ok := d.Find(key)
	if !ok || o == nil {
		return 0, false
	}
	n, err := x.DereferenceInteger(o)
	if err != nil || n == nil {
		return 0, false
	}
	return n.Value(), true
}

// soleFilter returns the image's one filter and its parameters (nil when
// none): a chain of filters, or none at all, is refused.
func soleFilter(x *model.XRefTable, d types.Dict) (string, types.Dict, error) {
	o, ok := d.Find("Filter")
	if !ok || o == nil {
		return "", nil, notOne("image is not compressed")
	}
	o, err := x.Dereference(o)
	if err != nil {
		return "", nil, fmt.Errorf("image filter: %w", err)
	}
	if a, ok := o.(types.Array); ok {
		if len(a) != 1 {
			return "", nil, notOne("image has a chain of %d filters", len(a))
		}
		if o, err = x.Dereference(a[0]); err != nil {
			return "", nil, fmt.Errorf("image filter: %w", err)
		}
	}
	name, ok := o.(types.Name)
	if !ok {
		return "", nil, notOne("image filter is not a name")
	}
	var parms types.Dict
	if p, ok := d.Find("DecodeParms"); ok && p != nil {
		p, err := x.Dereference(p)
		if err != nil {
			return "", nil, fmt.Errorf("image decode parameters: %w", err)
		}
		if a, ok := p.(types.Array); ok {
			if len(a) != 1 {
				return "", nil, notOne("image decode parameters do not match its filter")
			}
			if p, err = x.Dereference(a[0]); err != nil {
				return "", nil, fmt.Errorf("image decode parameters: %w", err)
			}
		}
		switch p := p.(type) {
		case types.Dict:
			parms = p
		case nil:
		default:
			return "", nil, notOne("image decode parameters are not a dictionary")
		}
	}
	return name.Value(), parms, nil
}

// colorSpace maps the image's colour space to a PNG colour type: 0 for
// DeviceGray, 2 for DeviceRGB, 3 with its palette for [/Indexed /DeviceRGB
// hival lookup]. The palette is padded to 1<<bpc entries with its last
// colour, as PDF clips an index above hival.
func colorSpace(x *model.XRefTable, d types.Dict, bpc int) (int, []byte, error) {
	o, ok := d.Find("ColorSpace")
	if !ok || o == nil {
		return 0, nil, notOne("image has no colour space")
	}
	o, err := x.Dereference(o)
	if err != nil {
		return 0, nil, fmt.Errorf("image colour space: %w", err)
	}
	switch o := o.(type) {
	case types.Name:
		switch o.Value() {
		case "DeviceGray":
			return 0, nil, nil
		case "DeviceRGB":
			return 2, nil, nil
		}
		return 0, nil, notOne("image colour space /%s", o.Value())
	case types.Array:
		if len(o) != 4 {
			return 0, nil, notOne("image colour space is not a plain indexed one")
		}
		family, err := x.Dereference(o[0])
		if n, ok := family.(types.Name); err != nil || !ok || n.Value() != "Indexed" {
			return 0, nil, notOne("image colour space is not a plain indexed one")
		}
		base, err := x.Dereference(o[1])
		if n, ok := base.(types.Name); err != nil || !ok || n.Value() != "DeviceRGB" {
			return 0, nil, notOne("indexed image over another base than /DeviceRGB")
		}
		hi, err := x.DereferenceInteger(o[2])
		if err != nil || hi == nil || hi.Value() < 0 || hi.Value() > 255 || bpc < 1 || bpc > 8 {
			return 0, nil, notOne("indexed image with a bad hival")
		}
		lookup, err := paletteBytes(x, o[3])
		if err != nil {
			return 0, nil, err
		}
		n := hi.Value() + 1
		if len(lookup) < 3*n {
			return 0, nil, notOne("indexed image palette has %d bytes for %d colours", len(lookup), n)
		}
		size := 1 << bpc
		pal := make([]byte, 0, 3*size)
		pal = append(pal, lookup[:3*min(n, size)]...)
		last := pal[len(pal)-3:]
		for len(pal) < 3*size {
			pal = append(pal, last[0], last[1], last[2])
		}
		return 3, pal, nil
	}
	return 0, nil, notOne("image colour space is neither a name nor an array")
}

// paletteBytes returns the lookup table of an indexed colour space: a hex
// string, a literal string or a (small) stream.
func paletteBytes(x *model.XRefTable, o types.Object) ([]byte, error) {
	o, err := x.Dereference(o)
	if err != nil {
		return nil, fmt.Errorf("image palette: %w", err)
	}
	var b []byte
	switch o := o.(type) {
	case types.HexLiteral:
		b, err = o.Bytes()
	case types.StringLiteral:
		b, err = types.Unescape(o.Value())
	case types.StreamDict:
		if len(o.Raw) > maxContentBytes {
			return nil, notOne("image palette stream too long")
		}
		c := o
		c.Content = nil
		if err = c.DecodeWithLimit(maxContentBytes); err == nil {
			b = c.Content
		}
	default:
		return nil, notOne("image palette is neither a string nor a stream")
	}
	if err != nil {
		return nil, notOne("image palette unreadable: %v", err)
	}
	return b, nil
}

// checkPredictor checks the DecodeParms of a FlateDecode image: a PNG
// predictor (10–15) whose /Colors, /BitsPerComponent and /Columns are
// the image's, so that the data is PNG image data row for row.
func checkPredictor(x *model.XRefTable, parms types.Dict, w, bpc, colorType int) error {
	if parms == nil {
		return notOne("Flate image without a PNG predictor")
	}
	get := func(key string, def int) (int, bool) {
		if o, ok := parms.Find(key); !ok || o == nil {
			return def, true
		}
		return intEntry(x, parms, key)
	}
	pred, ok := get("Predictor", 1)
	if !ok || pred < 10 || pred > 15 {
		return notOne("Flate image without a PNG predictor")
	}
	colors := 1
	if colorType == 2 {
		colors = 3
	}
	if c, ok := get("Colors", 1); !ok || c != colors {
		return notOne("predictor /Colors do not match the image")
	}
	if b, ok := get("BitsPerComponent", 8); !ok || b != bpc {
		return notOne("predictor /BitsPerComponent does not match the image")
	}
	if c, ok := get("Columns", 1); !ok || c != w {
		return notOne("predictor /Columns do not match the image")
	}
	return nil
}

// validPNGDepth reports whether PNG allows bpc bits per sample for a
// colour type (16-bit samples are not taken here).
func validPNGDepth(colorType, bpc int) bool {
	switch colorType {
	case 0, 3:
		return bpc == 1 || bpc == 2 || bpc == 4 || bpc == 8
	case 2:
		return bpc == 8
	}
	return false
}

// checkJPEG walks the JPEG's markers to its frame header and checks that
// it is a baseline, extended or progressive 8-bit frame of the image's
// size and number of components (what libjpeg reads).
func checkJPEG(b []byte, w, h, comps int) error {
	if len(b) < 4 || b[0] != 0xFF || b[1] != 0xD8 {
		return notOne("image data is not a JPEG")
	}
	for i := 2; i+4 <= len(b); {
		if b[i] != 0xFF {
			return notOne("JPEG markers are corrupt")
		}
		marker := b[i+1]
		if marker == 0xFF { // fill byte
			i++
			continue
		}
		if marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7) { // no length
			i += 2
			continue
		}
		n := int(binary.BigEndian.Uint16(b[i+2:]))
		if n < 2 || i+2+n > len(b) {
			return notOne("JPEG markers are corrupt")
		}
		switch marker {
		case 0xC0, 0xC1, 0xC2:
			seg := b[i+4 : i+2+n]
			if len(seg) < 6 || seg[0] != 8 || int(binary.BigEndian.Uint16(seg[1:])) != h ||
				int(binary.BigEndian.Uint16(seg[3:])) != w || int(seg[5]) != comps {
				return notOne("JPEG frame does not match the image dictionary")
			}
			return nil
		case 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF, 0xDA, 0xD9:
			return notOne("JPEG is lossless, hierarchical, arithmetic-coded or has no frame header")
		}
		i += 2 + n
	}
	return notOne("JPEG has no frame header")
}

// write copies the image data from the PDF into a JPEG or PNG file at
// path, checking it against the CRC taken when the page was inspected.
func (im *pageImage) write(pdf, path string) error {
	f, err := os.Open(pdf)
	if err != nil {
		return fmt.Errorf("page image: %w", err)
	}
	defer f.Close()
	o, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("page image: %w", err)
	}
	w := bufio.NewWriterSize(o, 256<<10)
	data := crc32.NewIEEE()
	src := io.TeeReader(io.NewSectionReader(f, im.offset, im.length), data)
	if im.ext == ".jpg" {
		var n int64
		if n, err = io.Copy(w, src); err == nil && n != im.length {
			err = fmt.Errorf("image data: %d of %d bytes", n, im.length)
		}
	} else {
		err = im.writePNG(w, src)
	}
	if err == nil && data.Sum32() != im.crc {
		err = errors.New("image data changed since the PDF was inspected")
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := o.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("page image: %w", err)
	}
	return nil
}

// writePNG writes a PNG around the image's Flate data read from src:
// signature, IHDR, PLTE for a palette, the data as one IDAT chunk, IEND.
func (im *pageImage) writePNG(w io.Writer, src io.Reader) error {
	io.WriteString(w, pngSignature)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(im.width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(im.height))
	ihdr[8], ihdr[9] = byte(im.depth), byte(im.colorType) // compression, filter, interlace 0
	if err := writeChunk(w, "IHDR", ihdr[:]); err != nil {
		return err
	}
	if im.colorType == 3 {
		if err := writeChunk(w, "PLTE", im.palette); err != nil {
			return err
		}
	}
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(im.length))
	copy(hdr[4:], "IDAT")
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	crc := crc32.NewIEEE()
	crc.Write(hdr[4:])
	n, err := io.Copy(io.MultiWriter(w, crc), src)
	if err != nil {
		return err
	}
	if n != im.length {
		return fmt.Errorf("image data: %d of %d bytes", n, im.length)
	}
	if err := binary.Write(w, binary.BigEndian, crc.Sum32()); err != nil {
		return err
	}
	return writeChunk(w, "IEND", nil)
}

// writeChunk writes one PNG chunk: length, type, data and CRC.
func writeChunk(w io.Writer, typ string, data []byte) error {
	b := make([]byte, 0, 12+len(data))
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, typ...)
	b = append(b, data...)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[4:]))
	_, err := w.Write(b)
	return err
}
